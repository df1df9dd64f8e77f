// Lists one consumer group's checkpoints with the JavaScript SDK's own
// blob checkpoint store, as a Node.js consumer of Event Hubs reads them,
// and prints them as JSON. Run by the Go test internal/replay, which
// checks that checkpoints Fusebox moved back read exactly as it wrote them.
//
// Environment: CONNECTION_STRING, NAMESPACE (fully qualified), HUB, GROUP.
import { BlobCheckpointStore } from "@azure/eventhubs-checkpointstore-blob";
import { ContainerClient } from "@azure/storage-blob";

const { CONNECTION_STRING, NAMESPACE, HUB, GROUP } = process.env;
for (const [name, value] of Object.entries({ CONNECTION_STRING, NAMESPACE, HUB, GROUP })) {
  if (!value) {
    console.error(`read-checkpoints: ${name} is not set`);
    process.exit(2);
  }
}

const store = new BlobCheckpointStore(new ContainerClient(CONNECTION_STRING, "azure-webjobs-eventhub"));
const checkpoints = await store.listCheckpoints(NAMESPACE, HUB, GROUP);
console.log(JSON.stringify(checkpoints.map((c) => ({ partition: c.partitionId, sequence: c.sequenceNumber, offset: String(c.offset) }))));
