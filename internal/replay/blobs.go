package replay

// The checkpoint blobs, read with their ETags and written on condition
// of them, in both of the extension's layouts.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/fusebox/fusebox/internal/egress"
	"github.com/fusebox/fusebox/internal/hostinsight"
)

// Current is a checkpoint blob as read for a plan or before a write.
type Current struct {
	Mark
	ETag string
	// Claimed is when the partition's ownership was last written (zero:
	// never); LeaseHeld says a v4 checkpoint blob is leased by a host.
	Claimed   time.Time
	LeaseHeld bool
	Modified  time.Time
}

// BadBlob is a checkpoint blob that does not read: written by something
// else, it costs its own partition, never the others.
type BadBlob struct{ Why string }

func (e BadBlob) Error() string { return "replay: " + e.Why }

// ErrMoved is a conditional write refused: the blob changed since it was
// read.
var ErrMoved = errors.New("replay: the checkpoint changed since it was read")

// Checkpoints reads and writes one app's checkpoint blobs.
type Checkpoints struct{ Client *azblob.Client }

func blobNames(key string, legacy bool) (checkpoint, ownership string, err error) {
	parts := strings.Split(key, "/")
	if len(parts) != 4 {
		return "", "", fmt.Errorf("replay: %q does not name a partition", key)
	}
	prefix := strings.Join(parts[:3], "/")
	if legacy {
		return key, "", nil
	}
	return prefix + "/checkpoint/" + parts[3], prefix + "/ownership/" + parts[3], nil
}

// Read reads key's checkpoint, its ETag and its ownership.
func (c Checkpoints) Read(ctx context.Context, key string, legacy bool) (Current, error) {
	name, owner, err := blobNames(key, legacy)
	if err != nil {
		return Current{}, err
	}
	cur := Current{Mark: Mark{Key: key, Legacy: legacy}}
	bc := c.Client.ServiceClient().NewContainerClient(hostinsight.EventHubContainer).NewBlobClient(name)
	if legacy {
		resp, err := bc.DownloadStream(ctx, nil)
		if err != nil {
			return Current{}, failed("read "+name, err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if err != nil {
			return Current{}, failed("read "+name, err)
		}
		var body struct {
			Offset         *string
			SequenceNumber *int64
		}
		if err := json.Unmarshal(data, &body); err != nil {
			return Current{}, BadBlob{name + " is not a checkpoint in the legacy layout"}
		}
		if body.SequenceNumber != nil {
			cur.Sequence, cur.HasSequence = *body.SequenceNumber, true
		}
		if body.Offset != nil {
			cur.Offset = *body.Offset
		}
		cur.ETag = etag(resp.ETag)
		cur.LeaseHeld = resp.LeaseState != nil && *resp.LeaseState == "leased"
		if resp.LastModified != nil {
			cur.Modified = *resp.LastModified
		}
		return cur, nil
	}
	props, err := bc.GetProperties(ctx, nil)
	if err != nil {
		return Current{}, failed("read "+name, err)
	}
	md := map[string]string{}
	for k, v := range props.Metadata {
		if v != nil {
			md[strings.ToLower(k)] = *v
		}
	}
	if s, ok := md["sequencenumber"]; ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Current{}, BadBlob{fmt.Sprintf("%s: sequencenumber %q is not a sequence number", name, s)}
		}
		cur.Sequence, cur.HasSequence = n, true
	}
	cur.Offset = md["offset"]
	cur.ETag = etag(props.ETag)
	if props.LastModified != nil {
		cur.Modified = *props.LastModified
	}
	op, err := c.Client.ServiceClient().NewContainerClient(hostinsight.EventHubContainer).NewBlobClient(owner).GetProperties(ctx, nil)
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound):
	case err != nil:
		return Current{}, failed("read "+owner, err)
	case op.LastModified != nil:
		cur.Claimed = *op.LastModified
	}
	return cur, nil
}

// Claimed is when key's ownership was last written (the v5 layout's
// ownership blob) and whether a host leases its blob (the v4 layout).
func (c Checkpoints) Claimed(ctx context.Context, key string, legacy bool) (time.Time, bool, error) {
	name, owner, err := blobNames(key, legacy)
	if err != nil {
		return time.Time{}, false, err
	}
	if legacy {
		owner = name
	}
	props, err := c.Client.ServiceClient().NewContainerClient(hostinsight.EventHubContainer).NewBlobClient(owner).GetProperties(ctx, nil)
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, failed("read "+owner, err)
	case legacy:
		return time.Time{}, props.LeaseState != nil && *props.LeaseState == "leased", nil
	case props.LastModified != nil:
		return *props.LastModified, false, nil
	}
	return time.Time{}, false, nil
}

// Write sets key's checkpoint to target, on condition that the blob is
// still at etag: ErrMoved if it is not.
func (c Checkpoints) Write(ctx context.Context, key string, target Mark, etagWas string) error {
	name, _, err := blobNames(key, target.Legacy)
	if err != nil {
		return err
	}
	bc := c.Client.ServiceClient().NewContainerClient(hostinsight.EventHubContainer).NewBlockBlobClient(name)
	match := azcore.ETag(etagWas)
	cond := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &match}}
	if target.Legacy {
		// The v4 body is rewritten whole, keeping what else it holds.
		resp, err := bc.DownloadStream(ctx, &blob.DownloadStreamOptions{AccessConditions: cond})
		if err != nil {
			return failed("write "+name, err)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err != nil {
			return failed("write "+name, err)
		}
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			return BadBlob{name + " is not a checkpoint in the legacy layout"}
		}
		body["SequenceNumber"] = target.Sequence
		body["Offset"] = target.Offset
		out, _ := json.Marshal(body)
		_, err = bc.Upload(ctx, streaming.NopCloser(bytes.NewReader(out)), &blockblob.UploadOptions{AccessConditions: cond})
		return failed("write "+name, err)
	}
	// Metadata is replaced whole: the offset and sequence number written
	// are one real checkpoint's, never a mix of two.
	md := map[string]*string{"sequencenumber": to.Ptr(strconv.FormatInt(target.Sequence, 10))}
	if target.Offset != "" {
		md["offset"] = to.Ptr(target.Offset)
	}
	_, err = bc.SetMetadata(ctx, md, &blob.SetMetadataOptions{AccessConditions: cond})
	return failed("write "+name, err)
}

// failed words a blob failure without the server's text (it may carry a
// signed URL); ErrMoved for a failed condition.
func failed(what string, err error) error {
	if err == nil {
		return nil
	}
	if bloberror.HasCode(err, bloberror.ConditionNotMet) {
		return ErrMoved
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == 412 {
		return ErrMoved
	}
	msg := "replay: " + what + ": " + egress.Class(err)
	if errors.As(err, &re) && re.StatusCode == 403 {
		msg += ": give Fusebox's host-insight identity Storage Blob Data Contributor on the app's storage account to move checkpoints"
	}
	return &blobError{msg: msg, err: err}
}

// Words says err in words safe to show: a replay's own sentences, a blob
// failure's class and what to grant, never a server's text.
func Words(err error) string {
	var nr ErrNotReady
	var be *blobError
	var bad BadBlob
	switch {
	case errors.As(err, &nr):
		return nr.Why
	case errors.As(err, &bad):
		return bad.Why
	case errors.As(err, &be):
		return be.msg
	}
	return "storage did not answer as expected"
}

type blobError struct {
	msg string
	err error
}

func (e *blobError) Error() string { return e.msg }
func (e *blobError) Unwrap() error { return e.err }

func etag(e *azcore.ETag) string {
	if e == nil {
		return ""
	}
	return string(*e)
}
