import * as tessera from '../node_modules/tessera-ecs/dist/index.js';
import { runWorker } from '../shared/page.js';

runWorker(tessera);
