// Package hostinsight reads what the Azure Functions host keeps in a
// function app's own storage account (AzureWebJobsStorage): Event Hubs
// checkpoints and partition ownership, the learned-concurrency snapshot,
// timer status and the host's blob-lease locks. It only reads.
//
// Everything in those containers was written by another program: every
// blob is bad input until it parses. A blob that is missing, unreadable or
// malformed is reported as such, with its name and the reason, beside the
// ones that read; nothing here fails a whole snapshot because of one blob,
// and every call is bounded by the caller's context (Snapshot adds its own
// time-out), so a slow account never holds up circuit control, which never
// calls this package.
package hostinsight

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/fusebox/fusebox/internal/egress"
)

// Containers the host writes.
const (
	EventHubContainer = "azure-webjobs-eventhub"
	HostsContainer    = "azure-webjobs-hosts"
)

// HostID derives the host id as the Functions host does when the app sets
// none: AzureFunctionsWebHost__hostid if set, else the site name lower-
// cased (with "-<slot>" for a non-production slot), cut to 32 characters,
// trailing '-' removed.
func HostID(setting, site, slot string) string {
	if setting != "" {
		return setting
	}
	id := strings.ToLower(site)
	if slot != "" && !strings.EqualFold(slot, "production") {
		id += "-" + strings.ToLower(slot)
	}
	if len(id) > 32 {
		id = id[:32]
	}
	return strings.TrimRight(id, "-")
}

// Reader reads one app's host storage.
type Reader struct {
	client *azblob.Client
	hostID string
}

// NewReader reads through client, for the host with hostID.
func NewReader(client *azblob.Client, hostID string) *Reader {
	return &Reader{client: client, hostID: hostID}
}

// blobClient is the client a host-storage setting names: an account URL
// read with cred, or a connection string, through transport (nil: the
// SDK's own). Nothing is sent yet.
func blobClient(setting string, cred azcore.TokenCredential, transport policy.Transporter) (*azblob.Client, error) {
	if !isAccountURL(setting) {
		c, err := azblob.NewClientFromConnectionString(setting, clientOptions(transport))
		if err != nil {
			return nil, errors.New("must be the app's AzureWebJobsStorage connection string or its blob account URL (https://<account>.blob.core.windows.net)")
		}
		return c, nil
	}
	if cred == nil {
		return nil, errors.New("an account URL needs a managed identity, and this Fusebox has no Azure credential")
	}
	c, err := azblob.NewClient(setting, cred, clientOptions(transport))
	if err != nil {
		return nil, errors.New("the account URL does not make a client")
	}
	return c, nil
}

func isAccountURL(setting string) bool {
	return strings.HasPrefix(setting, "https://") || strings.HasPrefix(setting, "http://")
}

func clientOptions(transport policy.Transporter) *azblob.ClientOptions {
	o := &azblob.ClientOptions{}
	if transport != nil {
		o.Transport = transport
	}
	// The page's own deadline bounds a read; retries inside it would only
	// hide an account that does not answer.
	o.Retry.MaxRetries = -1
	return o
}

// Problem is a blob that could not be read or understood.
type Problem struct {
	Blob   string // container/name
	Reason string
}

// Key names a checkpoint's partition: namespace/hub/group/partition.
func (c Checkpoint) Key() string {
	return c.Namespace + "/" + c.Hub + "/" + c.ConsumerGroup + "/" + c.Partition
}

type blob struct {
	name     string
	metadata map[string]string // keys lower-cased
	modified time.Time
	lease    string // leased, available, expired, breaking, broken
	duration string // infinite or fixed
}

func (r *Reader) list(ctx context.Context, containerName, prefix string) ([]blob, error) {
	var out []blob
	p := r.client.NewListBlobsFlatPager(containerName, &container.ListBlobsFlatOptions{Prefix: &prefix, Include: container.ListBlobsInclude{Metadata: true}})
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if bloberror.HasCode(err, bloberror.ContainerNotFound) {
				return nil, nil // the host never wrote one: nothing to show
			}
			return out, describe(containerName, err)
		}
		if page.Segment == nil {
			continue
		}
		for _, it := range page.Segment.BlobItems {
			if it == nil || it.Name == nil {
				continue
			}
			b := blob{name: *it.Name, metadata: map[string]string{}}
			for k, v := range it.Metadata {
				if v != nil {
					b.metadata[strings.ToLower(k)] = *v
				}
			}
			if pr := it.Properties; pr != nil {
				if pr.LastModified != nil {
					b.modified = *pr.LastModified
				}
				if pr.LeaseState != nil {
					b.lease = string(*pr.LeaseState)
				}
				if pr.LeaseDuration != nil {
					b.duration = string(*pr.LeaseDuration)
				}
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// maxBlob bounds what is read of one blob: the host's status blobs are a
// few hundred bytes, a snapshot a few kilobytes.
const maxBlob = 256 << 10

// ErrNotFound is a blob the host has not written.
var ErrNotFound = errors.New("hostinsight: not written by the host (yet)")

// describe words a failed read for pages and logs: what was read and the
// class of failure, never the SDK's text, which carries the server's
// answer and, for a SAS connection string, the signed URL. The cause stays
// reachable through errors.Is and errors.As.
func describe(what string, err error) error {
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	msg := "hostinsight: " + what + ": " + egress.Class(err)
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == 403 {
		msg += ": give Fusebox's host-insight identity Storage Blob Data Reader on the app's storage account"
	}
	return &ReadError{msg: msg, err: err}
}

// ReadError is a failed read whose text is safe to show.
type ReadError struct {
	msg string
	err error
}

func (e *ReadError) Error() string { return e.msg }
func (e *ReadError) Unwrap() error { return e.err }

// Snapshot is everything at once, each part on its own: a part that fails
// is reported in Problems, the others are there.
type Snapshot struct {
	ReadAt      time.Time
	Checkpoints []Checkpoint
	Concurrency *Concurrency
	Timers      []Timer
	Locks       []Lock
	// Heads are the partitions' heads by Checkpoint.Key, read from Event
	// Hubs when the app names a connection to it.
	Heads    map[string]Head
	Problems []Problem
}

// Snapshot reads every part within timeout.
func (r *Reader) Snapshot(ctx context.Context, now time.Time, timeout time.Duration) Snapshot {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s := Snapshot{ReadAt: now}
	add := func(what string, err error) {
		if err != nil && !errors.Is(err, ErrNotFound) {
			s.Problems = append(s.Problems, Problem{what, err.Error()})
		}
	}
	cps, probs, err := r.Checkpoints(ctx)
	s.Checkpoints, s.Problems = cps, append(s.Problems, probs...)
	add(EventHubContainer, err)
	if c, err := r.Concurrency(ctx); err == nil {
		s.Concurrency = &c
	} else {
		add(HostsContainer+"/concurrency/"+r.hostID+"/concurrencyStatus.json", err)
	}
	timers, probs, err := r.Timers(ctx)
	s.Timers, s.Problems = timers, append(s.Problems, probs...)
	add(HostsContainer+"/timers", err)
	locks, err := r.Locks(ctx)
	s.Locks = locks
	add(HostsContainer, err)
	return s
}

// CheckHostStorage says what is wrong with a host-storage setting, or nil:
// a connection string that parses, or a blob account URL, either of an
// endpoint eps allows.
func CheckHostStorage(eps egress.Endpoints, setting string) error {
	if setting == "" {
		return nil
	}
	endpoint := setting
	if !isAccountURL(setting) {
		c, err := blobClient(setting, nil, nil)
		if err != nil {
			return err
		}
		endpoint = c.URL()
	}
	var refused *egress.EndpointError
	if err := eps.CheckBlobURL(endpoint); errors.As(err, &refused) {
		return errors.New(refused.Reason + "; Fusebox reads only Azure Storage endpoints over https")
	}
	return nil
}

// TimerOf finds a function's timer in a snapshot.
func TimerOf(s Snapshot, function string) (Timer, bool) {
	for _, t := range s.Timers {
		if t.Function == function {
			return t, true
		}
	}
	return Timer{}, false
}

// BlobEndpoint is the blob account a host storage setting (a connection
// string or an account URL) reaches, as host and path in lower case
// (ordersstore.blob.core.windows.net, 127.0.0.1:10000/devstoreaccount1):
// what two settings are compared by to tell whether they name one account.
func BlobEndpoint(setting string) (string, error) {
	endpoint := setting
	if !isAccountURL(setting) {
		c, err := blobClient(setting, nil, nil)
		if err != nil {
			return "", err
		}
		endpoint = c.URL()
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", errors.New("names no blob account")
	}
	return strings.ToLower(u.Host + strings.TrimSuffix(u.Path, "/")), nil
}
