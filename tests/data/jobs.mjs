// measure/jobs.mjs — a job object's completion guarantee and a cron job's overlap policies.
// MODEL: the job object, attempt counter, parallelism slots, and nightly schedule are a model built
// in node; no real cluster runs. The numbers below are the model's numbers.
const NIGHTS = 30, SLICES = 12, INTERVAL = 24, SEED = 20260813, FAIL_PROB = 0.5;
let s = SEED % 2147483647;
const random = () => (s = (s * 48271) % 2147483647) / 2147483647;

// --- 1. completion guarantee: attempt limit ---
console.log(`${"attempt limit".padEnd(14)}${"completed nights".padStart(17)}${"failed nights".padStart(15)}` +
  `${"total attempts".padStart(16)}${"wasted attempts".padStart(17)}${"leftover pods".padStart(15)}`);
for (const limit of [1, 3, 6]) {
  s = SEED % 2147483647;
  let completed = 0, attempts = 0, wasted = 0;
  for (let g = 0; g < NIGHTS; g += 1) {
    let d = 0, ok = false;
    while (d < limit && !ok) { d += 1; attempts += 1; if (random() >= FAIL_PROB) ok = true; else wasted += 1; }
    if (ok) completed += 1;
  }
  console.log(`${String(limit).padEnd(14)}${String(completed).padStart(17)}${String(NIGHTS - completed).padStart(15)}` +
    `${String(attempts).padStart(16)}${String(wasted).padStart(17)}${String(wasted).padStart(15)}`);
}

// --- 2. parallelism and completion count ---
console.log(`\n${"parallelism".padEnd(12)}${"completions".padStart(13)}${"rounds".padStart(8)}${"pod-rounds".padStart(12)}` +
  `${"empty slots".padStart(13)}${"one slice needs 2 tries".padStart(25)}${"increase".padStart(10)}`);
for (const p of [1, 3, 5, 6, 12]) {
  const rounds = Math.ceil(SLICES / p), delayed = rounds + 1;
  console.log(`${String(p).padEnd(12)}${String(SLICES).padStart(13)}${String(rounds).padStart(8)}${String(SLICES).padStart(12)}` +
    `${String(p * rounds - SLICES).padStart(13)}${String(delayed).padStart(25)}${`%${Math.round((delayed / rounds - 1) * 100)}`.padStart(10)}`);
}

// --- 3. overlap: three policies ---
s = SEED % 2147483647;
const DURATION = Array.from({ length: NIGHTS }, () => (random() < 0.25 ? 30 + Math.floor(random() * 25) : 3 + Math.floor(random() * 5)));
console.log(`\n${NIGHTS} nights' run durations (hours): ${DURATION.join(",")}`);

function policy(label) {
  const start = new Array(NIGHTS).fill(null), end = new Array(NIGHTS).fill(null);
  let finish = 0, started = 0, skipped = 0, delay = 0;
  for (let g = 0; g < NIGHTS; g += 1) {
    const t = g * INTERVAL;
    if (label === "skip" && finish > t) { skipped += 1; continue; }
    const b = label === "queue" ? Math.max(t, finish) : t;
    start[g] = b; end[g] = b + DURATION[g]; finish = end[g]; delay += b - t; started += 1;
  }
  let maxConcurrent = 0, maxQueue = 0;
  for (let g = 0; g < NIGHTS; g += 1) {
    const t = g * INTERVAL;
    maxConcurrent = Math.max(maxConcurrent, start.filter((b, i) => b !== null && b <= t && end[i] > t).length);
    maxQueue = Math.max(maxQueue, start.filter((b, i) => b !== null && b > t && i * INTERVAL <= t).length);
  }
  const last = NIGHTS * INTERVAL;
  return { started, skipped, delay, maxConcurrent, maxQueue,
    carryover: start.filter((b) => b !== null && b >= last).length,
    podHours: start.reduce((a, b, i) => a + (b === null ? 0 : end[i] - b), 0) };
}
const P = {};
console.log(`${"policy".padEnd(14)}${"started".padStart(9)}${"skipped".padStart(9)}${"max concurrent".padStart(17)}` +
  `${"max queue".padStart(12)}${"avg delay (hours)".padStart(20)}${"pod-hours".padStart(12)}`);
for (const label of ["skip", "queue", "run parallel"]) {
  const r = policy(label); P[label] = r;
  console.log(`${label.padEnd(14)}${String(r.started).padStart(9)}${String(r.skipped).padStart(9)}${String(r.maxConcurrent).padStart(17)}` +
    `${String(r.maxQueue).padStart(12)}${(r.delay / r.started).toFixed(2).padStart(20)}${String(r.podHours).padStart(12)}`);
}
console.log(`unprocessed nights: skip ${NIGHTS - P["skip"].started}, queue ${NIGHTS - P["queue"].started}, ` +
  `run parallel ${NIGHTS - P["run parallel"].started}; runs carrying past the horizon ${P["queue"].carryover}`);

// --- 4. missed run: the controller is down from night 10 to 12 ---
const MISSED = 3;
console.log(`\n${"startup window".padEnd(16)}${"made up".padStart(11)}${"dropped".padStart(11)}` +
  `${"ran under skip".padStart(17)}${"ran under queue".padStart(18)}${"ran under parallel".padStart(21)}`);
for (const window of [0, 1, 3]) {
  const madeUp = Math.min(window, MISSED);
  console.log(`${String(window).padEnd(16)}${String(madeUp).padStart(11)}${String(MISSED - madeUp).padStart(11)}` +
    `${String(Math.min(madeUp, 1)).padStart(17)}${String(madeUp).padStart(18)}${String(madeUp).padStart(21)}`);
}
console.log(`information items: 4 per night (scheduled time, run duration, attempt counter, active-run count) = ${NIGHTS * 4} (seed ${SEED})`);
