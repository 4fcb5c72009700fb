// One case in its own module worker (its own V8 isolate), as the Node runner gives each case
// its own process: no case inherits another's JIT feedback. Told { caseName, filter,
// contenders, runs, targetMs } (or { list: true }); answers { progress } messages, then { rows, missing } or { error }.
import { contenders } from '../../bench/js/contenders/index.js';
import { benchCase } from '../../bench/js/measure.js';

self.onmessage = async ({ data }) => {
    if (data.list) {
        // What the page needs to plan the run, without loading every library on the main thread.
        self.postMessage({
            list: contenders.map((c) => ({ name: c.name, kind: c.kind, pkg: c.pkg, version: c.version, keys: Object.keys(c.cases) })),
        });
        return;
    }
    try {
        const chosen = contenders.filter((c) => !data.contenders || data.contenders.includes(c.name));
        const { rows, missing } = await benchCase(data.caseName, {
            chosen,
            filter: data.filter,
            runs: data.runs,
            targetMs: data.targetMs,
            progress: (text) => self.postMessage({ progress: text }),
        });
        self.postMessage({ rows, missing });
    } catch (err) {
        self.postMessage({ error: String(err?.stack ?? err) });
    }
};
