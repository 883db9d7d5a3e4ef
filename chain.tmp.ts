import { startMoto } from './tools/local/moto.js';
import { measureChains } from './tools/bench/catch-up.js';
const moto = await startMoto();
for (const [feeds, versions, latencyMs] of [[1, 4000, 150], [1, 2000, 400], [2, 2000, 400], [4, 2000, 400]] as const) {
  const m = await measureChains({ moto, versions, latencyMs, runBudgetMs: 2000, feeds, vendors: 4, seed: 1 });
  console.log(feeds, latencyMs, m.versions, 'wall', m.wallMs.toFixed(0), 'floor', m.floorMs.toFixed(0), 'ratio', (m.floorMs / m.wallMs).toFixed(2), m.feeds.map((f) => `${f.runs} runs ${f.pages} pages aws ${f.awsMsPerPage.toFixed(0)} ${JSON.stringify(f.outcomes)}`).join(' | '));
}
await moto.stop();
process.exit(0);
