// The plain page: no bundler, the installed package imported by relative path (served from the
// temp project's root, so node_modules/ is reachable).
import * as tessera from '../node_modules/tessera-ecs/dist/index.js';
import { runPage } from '../shared/page.js';

runPage(tessera, () => new Worker(new URL('./worker.js', import.meta.url), { type: 'module' }));
