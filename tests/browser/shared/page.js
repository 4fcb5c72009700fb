// Page glue shared by the Vite app and the plain page. `?mode=worker` runs the scenario in a
// module worker (made by the caller, so that Vite sees `new Worker(new URL(...))` in the app),
// otherwise on the main thread. The outcome goes to window.__result and to #result.
import { scenario } from './scenario.js';

/** Runs the scenario in `worker` and resolves with what it posts back. */
function fromWorker(worker) {
    return new Promise((resolve, reject) => {
        worker.addEventListener('message', (event) => resolve(event.data));
        worker.addEventListener('error', (event) => reject(new Error(`worker error: ${event.message ?? 'unknown'}`)));
        worker.addEventListener('messageerror', () => reject(new Error('worker messageerror')));
    });
}

export async function runPage(tessera, createWorker) {
    const mode = new URLSearchParams(location.search).get('mode') ?? 'main';
    let outcome;
    try {
        outcome = mode === 'worker' ? await fromWorker(createWorker()) : { ok: true, where: 'main', result: await scenario(tessera) };
    } catch (error) {
        outcome = { ok: false, where: mode, error: String(error?.stack ?? error) };
    }
    document.getElementById('result').textContent = JSON.stringify(outcome, null, 2);
    window.__result = outcome;
}

/** The worker side: runs the scenario and posts the outcome. */
export async function runWorker(tessera) {
    try {
        self.postMessage({ ok: true, where: 'worker', result: await scenario(tessera) });
    } catch (error) {
        self.postMessage({ ok: false, where: 'worker', error: String(error?.stack ?? error) });
    }
}
