// Writes rows that do not follow docs/storage.md into every table Fusebox
// reads, as a careless tool using the JavaScript SDK might. Run by the Go
// test internal/web/badrows_test.go, which checks that Fusebox skips and
// lists each of them and goes on working.
//
// Environment: CONNECTION_STRING, PREFIX (the tables' prefix), JOB (a job id
// whose Runs partition gets a bad row), MONTH (the audit's current month,
// "2006-01", whose partition gets one).
import { TableClient } from "@azure/data-tables";

const { CONNECTION_STRING, PREFIX, JOB, MONTH } = process.env;
for (const [name, value] of Object.entries({ CONNECTION_STRING, PREFIX, JOB, MONTH })) {
  if (!value) {
    console.error(`write-bad-rows: ${name} is not set`);
    process.exit(2);
  }
}

const rows = {
  Circuits: [
    { partitionKey: "orders-demo", rowKey: "c|Melted", State: "melted", Threshold: 5, WindowSeconds: 30 },
    { partitionKey: "orders-demo", rowKey: "c|Wordy", State: "closed", Threshold: "many", WindowSeconds: 30 },
  ],
  Apps: [{ partitionKey: "app", rowKey: "broken-app", Switch: "carrier-pigeon", Linux: "yes" }],
  Jobs: [
    { partitionKey: "job", rowKey: "not-a-job", Name: "Broken", Schedule: "whenever", GraceSeconds: "soon", CreatedAt: "monday" },
    { partitionKey: "window", rowKey: "bad-window", From: "tomorrow", Until: 7 },
    // Readable, but with a misfire policy this version does not know: it
    // must not be taken for one that runs functions.
    { partitionKey: "job", rowKey: "bad-misfire", Name: "Odd", Schedule: "0 * * * *", TimeZone: "UTC", Status: "up", Misfire: "always",
      AppID: "orders-demo", Function: "ProcessOrders" },
  ],
  Runs: [{ partitionKey: JOB, rowKey: "0000000000000000000~x", Start: "yesterday", State: "ok" }],
  Channels: [
    { partitionKey: "channel", rowKey: "plain-http", Name: "Leaky", Kind: "slack", URL: "http://hooks.example.com/services/x" },
    { partitionKey: "channel", rowKey: "pigeon", Name: "Pigeon", Kind: "carrier-pigeon" },
  ],
  // The newest entry of the month (row keys count down), its time a word.
  Audit: [{ partitionKey: MONTH, rowKey: "0000000000000000000-bad", At: "yesterday", Actor: "someone", Action: "edited by hand" }],
  Outbox: [{ partitionKey: "msg", rowKey: "bad-message", State: "pending", NextAttempt: "now", Attempts: "a few" }],
  // What arrived over OpenTelemetry, per Fusebox instance: the Apps page reads it.
  Arrivals: [
    { partitionKey: "orders-demo", rowKey: "209901010000|traces|bad-source", Source: "pigeons", Exports: 1 },
    { partitionKey: "orders-demo", rowKey: "209901010000|logs|bad-count", Source: "logs", Exports: "lots" },
  ],
  // An issued API token's row written by hand: no role Fusebox knows, no
  // hash, no end. It must verify nothing.
  Tokens: [{ partitionKey: "token", rowKey: "0123456789abcdef", Name: "Forged", Role: "root", Hash: "x" }],
  // A team written by hand whose members do not read: they gain nothing.
  Teams: [{ partitionKey: "team", rowKey: "forged-team", Members: "[{\"who\": \"g-1\", \"role\": \"root\"}]" }],
  // A received alert written by hand: no condition Azure Monitor sends.
  Alerts: [{ partitionKey: MONTH, rowKey: "bad-alert", AlertID: "x", Rule: "r", Condition: "Exploded" }],
  // A downstream written by hand: a state Fusebox has not, and a member
  // that is no circuit's name. It must act on nothing; the real one stays.
  // A second whose pause window does not read: it costs only the window.
  Downstreams: [
    { partitionKey: "downstream", rowKey: "melted-db", Members: "orders-demo", State: "molten", Quorum: 1 },
    { partitionKey: "downstream", rowKey: "windy-db", Members: "orders-demo/ProcessOrders", State: "closed", Quorum: 0, PauseWindows: "every night for a while" },
  ],
  // What the watcher last saw of set-aside queues: the overview and app pages read it.
  SetAside: [
    { partitionKey: "orders-demo", rowKey: "orders-poison", Kind: "parking-lot", Count: 3 },
    { partitionKey: "orders-demo", rowKey: "bad-samples-poison", Kind: "poison", Count: 3, Samples: "yesterday:lots" },
    { partitionKey: "orders-demo", rowKey: "!run-orders-poison", To: "orders", Total: -5, Moved: 0, Doubled: 0 },
  ],
};

for (const [table, entities] of Object.entries(rows)) {
  const client = TableClient.fromConnectionString(CONNECTION_STRING, PREFIX + table, { allowInsecureConnection: true });
  for (const e of entities) {
    await client.upsertEntity(e, "Replace");
  }
  console.log(`write-bad-rows: ${entities.length} into ${PREFIX + table}`);
}
