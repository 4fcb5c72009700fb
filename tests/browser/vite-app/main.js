// The Vite app: imports the installed package by name; Vite bundles it and its tessera.wasm.
import * as tessera from 'tessera-ecs';
import { runPage } from '../shared/page.js';

runPage(tessera, () => new Worker(new URL('./worker.js', import.meta.url), { type: 'module' }));
