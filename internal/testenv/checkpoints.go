package testenv

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2/checkpoints"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/fusebox/fusebox/internal/hostinsight"
)

// CheckpointStore is the test Azurite's blob service and the azeventhubs
// SDK's own blob checkpoint store over its checkpoint container, which
// tests write and read checkpoints with as a Go consumer would.
func CheckpointStore(tb testing.TB) (*azblob.Client, *checkpoints.BlobStore) {
	tb.Helper()
	c, err := azblob.NewClientFromConnectionString(ConnectionString(tb), &azblob.ClientOptions{ClientOptions: Bounded()})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := c.CreateContainer(tb.Context(), hostinsight.EventHubContainer, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		tb.Fatal(err)
	}
	store, err := checkpoints.NewBlobStore(c.ServiceClient().NewContainerClient(hostinsight.EventHubContainer), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return c, store
}
