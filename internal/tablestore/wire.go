package tablestore

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// wire makes the calls Fusebox makes most, entity group transactions and
// queries, itself, through a pipeline built from the same options as the
// SDK's client (retries, try timeout, budget, transport, tracing) and the
// same credential. The SDK reads every row's JSON into a map and writes it
// out again, both ways: its SubmitTransaction was a third of an
// OpenTelemetry export's CPU (#33), and its query pages most of a window
// reread's. The wire format is the SDK's: the same paths, query
// parameters, multipart framing and headers, and a row's JSON as it was
// written, so Azure and Azurite see the same requests either way.
type wire struct {
	endpoint string // the table service's URL, without a query
	client   *azcore.Client
}

// Only what a failed transaction's answer says is read, and only this much
// of it: the inner status and error code of the action that failed.
const maxTransactionAnswer = 64 << 10

func newWire(endpoint string, auth policy.Policy, opts *aztables.ClientOptions) *wire {
	endpoint = strings.TrimSuffix(endpoint, "/")
	u, err := url.Parse(endpoint)
	if err != nil || u.RawQuery != "" || u.Host == "" || strings.Contains(u.Host, ".cosmos") {
		return nil // a SAS, or Cosmos DB's Table API: the SDK's path
	}
	client, err := azcore.NewClient("tablestore", "v1.0.0", runtime.PipelineOptions{PerRetry: []policy.Policy{auth}}, &opts.ClientOptions)
	if err != nil {
		return nil
	}
	return &wire{endpoint: endpoint, client: client}
}

// sharedKeyWire are transactions signed with the account key of a
// connection string; nil when the string has none (a SAS, which the SDK's
// path serves) or names no endpoint this can derive.
func sharedKeyWire(connectionString string, opts *aztables.ClientOptions) *wire {
	v := map[string]string{}
	for part := range strings.SplitSeq(strings.TrimRight(connectionString, ";"), ";") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil
		}
		v[k] = val
	}
	account, key := v["AccountName"], v["AccountKey"]
	secret, err := base64.StdEncoding.DecodeString(key)
	if account == "" || key == "" || err != nil {
		return nil
	}
	endpoint := v["TableEndpoint"]
	if endpoint == "" {
		protocol, suffix := v["DefaultEndpointsProtocol"], v["EndpointSuffix"]
		if protocol == "" {
			protocol = "https"
		}
		if suffix == "" {
			suffix = "core.windows.net"
		}
		endpoint = protocol + "://" + account + ".table." + suffix
	}
	return newWire(endpoint, &sharedKeyLite{account: account, key: secret}, opts)
}

// sharedKeyLite signs a request as the Table service's SharedKeyLite
// scheme asks: the date and the canonical resource, keyed with the account
// key (learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key).
type sharedKeyLite struct {
	account string
	key     []byte
}

func (s *sharedKeyLite) Do(req *policy.Request) (*http.Response, error) {
	r := req.Raw()
	date := time.Now().UTC().Format(http.TimeFormat)
	r.Header.Set("x-ms-date", date)
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(date + "\n/" + s.account + path))
	r.Header.Set("Authorization", "SharedKeyLite "+s.account+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return req.Next()
}

// submit posts one transaction of rows of a partition of table, as the
// SDK would; rows are the actions' row keys.
func (t *wire) submit(ctx context.Context, table, partition string, rows []string, actions []aztables.TransactionAction) (err error) {
	ctx, end := runtime.StartSpan(ctx, "Client.SubmitTransaction", t.client.Tracer(), nil)
	defer func() { end(err) }()
	batch, changeset := boundary("batch_"), boundary("changeset_")
	var body bytes.Buffer
	body.Grow(len(actions) * 1024)
	body.WriteString("--" + batch + "\r\nContent-Type: multipart/mixed; boundary=" + changeset + "\r\n\r\n")
	for i, a := range actions {
		body.WriteString("--" + changeset + "\r\nContent-Transfer-Encoding: binary\r\nContent-Type: application/http\r\n\r\n")
		entityPath := t.endpoint + "/" + url.PathEscape(table) + "(PartitionKey='" + keyLiteral(partition) + "',RowKey='" + keyLiteral(rows[i]) + "')"
		switch a.ActionType {
		case aztables.TransactionTypeAdd:
			body.WriteString("POST " + t.endpoint + "/" + url.PathEscape(table) + "?%24format=application%2Fjson%3Bodata%3Dminimalmetadata HTTP/1.1\r\n" +
				"Accept: application/json;odata=minimalmetadata\r\nContent-Type: application/json\r\nDataServiceVersion: 3.0\r\nPrefer: return-no-content\r\nX-Ms-Version: 2019-02-02\r\n\r\n")
			body.Write(a.Entity)
		case aztables.TransactionTypeInsertReplace, aztables.TransactionTypeUpdateReplace:
			body.WriteString("PUT " + entityPath + " HTTP/1.1\r\nAccept: application/json\r\nContent-Type: application/json\r\nDataServiceVersion: 3.0\r\n")
			if a.IfMatch != nil {
				body.WriteString("If-Match: " + string(*a.IfMatch) + "\r\n")
			}
			body.WriteString("X-Ms-Version: 2019-02-02\r\n\r\n")
			body.Write(a.Entity)
		case aztables.TransactionTypeUpdateMerge:
			body.WriteString("PATCH " + entityPath + " HTTP/1.1\r\nAccept: application/json\r\nContent-Type: application/json\r\nDataServiceVersion: 3.0\r\n" +
				"If-Match: " + string(*a.IfMatch) + "\r\nX-Ms-Version: 2019-02-02\r\n\r\n")
			body.Write(a.Entity)
		case aztables.TransactionTypeDelete:
			ifMatch := string(azcore.ETagAny)
			if a.IfMatch != nil {
				ifMatch = string(*a.IfMatch)
			}
			body.WriteString("DELETE " + entityPath + "?%24format=application%2Fjson%3Bodata%3Dminimalmetadata HTTP/1.1\r\n" +
				"Accept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0\r\nIf-Match: " + ifMatch + "\r\nX-Ms-Version: 2019-02-02\r\n\r\n")
		default:
			return fmt.Errorf("%w: an action of kind %q", ErrBatch, a.ActionType)
		}
		body.WriteString("\r\n")
	}
	body.WriteString("--" + changeset + "--\r\n\r\n--" + batch + "--\r\n")

	req, err := runtime.NewRequest(ctx, http.MethodPost, t.endpoint+"/$batch")
	if err != nil {
		return err
	}
	if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body.Bytes())), "multipart/mixed; boundary="+batch); err != nil {
		return err
	}
	_, answer, err := t.call(req, http.StatusAccepted, maxTransactionAnswer)
	if err != nil {
		return err
	}
	if status, code := failedAction(answer); status != 0 {
		return &transactionFailed{status: status, code: code}
	}
	return nil
}

// call sends req with the headers every Table call carries and reads at
// most limit bytes of the answer. An answer of another status than want
// (a malformed request, auth, throttling) is the SDK's error of it, which
// callers classify as any other.
func (t *wire) call(req *policy.Request, want int, limit int64) (*http.Response, []byte, error) {
	h := req.Raw().Header
	h.Set("x-ms-version", "2019-02-02")
	h.Set("DataServiceVersion", "3.0")
	h.Set("Accept", "application/json;odata=minimalmetadata")
	resp, err := t.client.Pipeline().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != want {
		resp.Body = io.NopCloser(bytes.NewReader(answer))
		return nil, nil, runtime.NewResponseError(resp)
	}
	return resp, answer, nil
}

var innerErrorCode = regexp.MustCompile(`"code"\s*:\s*"([A-Za-z]{1,64})"`)

// failedAction is the status and error code of the action a transaction's
// answer says failed; 0 when every action succeeded. Its status lines are
// looked for without a regular expression: a hundred of them come back
// from every transaction that succeeded.
func failedAction(answer []byte) (int, string) {
	const line = "\nHTTP/1.1 "
	for rest := answer; ; {
		i := bytes.Index(rest, []byte(line))
		if i < 0 || len(rest) < i+len(line)+3 {
			return 0, ""
		}
		rest = rest[i+len(line):]
		if s, err := strconv.Atoi(string(rest[:3])); err == nil && s >= 400 {
			code := ""
			if c := innerErrorCode.FindSubmatch(answer); c != nil {
				code = string(c[1])
			}
			return s, code
		}
	}
}

// transactionFailed is an action's failure inside an accepted transaction.
type transactionFailed struct {
	status int
	code   string
}

func (e *transactionFailed) Error() string {
	return fmt.Sprintf("an action of the transaction failed: HTTP %d %s", e.status, e.code)
}

// keyLiteral is a key as the quoted literal of an entity's address: its
// quotes doubled (OData's escape, which the SDK's single-row calls apply
// and its transactions do not), then escaped for a URL path.
func keyLiteral(key string) string {
	return url.PathEscape(strings.ReplaceAll(key, "'", "''"))
}

func boundary(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// maxQueryAnswer bounds one page of a query's answer. A page past it is
// not read; it is asked for again in fewer rows (readPage), down to one
// (at most 1 MiB in Azure), so rows others wrote large cost memory in
// bounded pages and never stop a read. A variable for tests.
var maxQueryAnswer = 16 << 20

// errPageTooLarge is a page of rows over maxQueryAnswer.
var errPageTooLarge = errors.New("a page of rows is over the size read at once")

// queryPage is one page of a query's answer: each row's JSON as the
// service sent it, and where the next page starts.
type queryPage struct {
	Rows   []json.RawMessage
	Next   Continuation
	Served time.Time // the service's Date; zero when it sent none
}

// query asks table for one page of rows, as the SDK's ListEntities pager
// would.
func (t *wire) query(ctx context.Context, table string, q Query, from Continuation) (page queryPage, err error) {
	ctx, end := runtime.StartSpan(ctx, "Client.ListEntities", t.client.Tracer(), nil)
	defer func() { end(err) }()
	req, err := runtime.NewRequest(ctx, http.MethodGet, t.endpoint+"/"+url.PathEscape(table)+"()")
	if err != nil {
		return queryPage{}, err
	}
	v := url.Values{}
	if q.Filter != "" {
		v.Set("$filter", string(q.Filter))
	}
	if len(q.Select) > 0 {
		v.Set("$select", strings.Join(q.Select, ","))
	}
	if q.Top > 0 {
		v.Set("$top", strconv.Itoa(int(min(q.Top, 1000))))
	}
	if !from.IsZero() {
		v.Set("NextPartitionKey", from.NextPartitionKey)
		v.Set("NextRowKey", from.NextRowKey)
	}
	req.Raw().URL.RawQuery = v.Encode()
	resp, body, err := t.call(req, http.StatusOK, int64(maxQueryAnswer)+1)
	if err != nil {
		return queryPage{}, err
	}
	if len(body) > maxQueryAnswer {
		return queryPage{}, errPageTooLarge
	}
	var answer struct {
		Value []json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return queryPage{}, fmt.Errorf("a page of %s's rows is not the JSON a query answers", table)
	}
	page.Rows = answer.Value
	page.Next = Continuation{NextPartitionKey: resp.Header.Get("x-ms-continuation-NextPartitionKey"), NextRowKey: resp.Header.Get("x-ms-continuation-NextRowKey")}
	if at, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		page.Served = at
	}
	return page, nil
}
