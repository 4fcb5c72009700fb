import * as tessera from 'tessera-ecs';
import { runWorker } from '../shared/page.js';

runWorker(tessera);
