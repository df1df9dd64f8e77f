// Writes failure counts into Fusebox's Failures table exactly as
// docs/storage.md tells functions in other languages to, using the
// JavaScript SDK. Run by the Go test internal/circuit/crosslang_test.go.
//
// Environment: CONNECTION_STRING, TABLE (full table name), APP, FUNCTION,
// TOTAL (failures to report), AT (ISO time of the last second to use).
import { TableClient } from "@azure/data-tables";

const { CONNECTION_STRING, TABLE, APP, FUNCTION, TOTAL, AT } = process.env;
for (const [name, value] of Object.entries({ CONNECTION_STRING, TABLE, APP, FUNCTION, TOTAL, AT })) {
  if (!value) {
    console.error(`report-failures: ${name} is not set`);
    process.exit(2);
  }
}

const table = TableClient.fromConnectionString(CONNECTION_STRING, TABLE, { allowInsecureConnection: true });
const writer = `node-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;

async function report(app, fn, when, runningTotal, successes, sample) {
  const second = new Date(Math.floor(when.getTime() / 1000) * 1000);
  const iso = second.toISOString();
  const partitionKey = iso.slice(0, 16).replace(/[-T:]/g, "");
  const rowKey = `${app}|${fn}|${iso.slice(17, 19)}|${writer}`;
  await table.upsertEntity(
    {
      partitionKey,
      rowKey,
      App: app,
      Function: fn,
      Second: second,
      Count: { value: String(runningTotal), type: "Int32" },
      Successes: { value: String(successes), type: "Int32" },
      Sample: sample,
    },
    "Replace",
  );
}

// Spread the failures over the last three seconds, and within each second
// flush twice with a running total, as a writer aggregating locally does.
const total = Number(TOTAL);
const end = new Date(AT);
let left = total;
for (let i = 2; i >= 0; i--) {
  const inSecond = i === 0 ? left : Math.floor(total / 3);
  left -= inSecond;
  const when = new Date(end.getTime() - i * 1000);
  const half = Math.floor(inSecond / 2);
  if (half > 0) await report(APP, FUNCTION, when, half, 0, "first flush");
  await report(APP, FUNCTION, when, inSecond, 0, "ECONNRESET talking to the inventory API");
}
console.log(`report-failures: wrote ${total} failures of ${APP}/${FUNCTION} as ${writer}`);
