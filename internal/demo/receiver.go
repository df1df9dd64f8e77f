package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/storage"
)

// WebhookSecret signs the demo webhook channel's deliveries. It is public,
// in the source, so it must never sign anything real.
const WebhookSecret = "whsec_ZGVtby1vbmx5LW5vdC1hLXJlYWwtc2VjcmV0LWZ1c2Vib3g="

// SeedChannels adds one channel of each kind, the chat ones pointed at a
// Receiver at receiverURL, and makes them the demo app's default channels.
func SeedChannels(ctx context.Context, st *storage.Store, receiverURL string, now time.Time) error {
	chs := []alerts.Channel{
		{ID: "demo-mail", Name: "Team list (mail)", Kind: alerts.ChannelMail, Addresses: []string{"team@example.com", "lead@example.com"}},
		{ID: "demo-teams", Name: "Ops channel in Teams (demo receiver)", Kind: alerts.ChannelTeams, URL: receiverURL + "/teams"},
		{ID: "demo-slack", Name: "#ops in Slack (demo receiver)", Kind: alerts.ChannelSlack, URL: receiverURL + "/slack"},
		{ID: "demo-webhook", Name: "Pager webhook (demo receiver)", Kind: alerts.ChannelWebhook, URL: receiverURL + "/webhook", Secret: WebhookSecret},
	}
	var ids []string
	for _, ch := range chs {
		ch.CreatedAt, ch.Team = now, TeamOrders
		if err := st.Channels.Delete(ctx, ch.ID); err != nil {
			return err
		}
		if err := st.Channels.Create(ctx, ch); err != nil {
			return err
		}
		ids = append(ids, ch.ID)
	}
	app, err := st.Apps.Get(ctx, AppID)
	if err != nil {
		return err
	}
	app.Channels = ids
	return st.Apps.Put(ctx, app)
}

// Receiver stands in for Teams, Slack and a webhook receiver on a
// developer's machine: it keeps what it is sent (the webhook's signature
// checked with the Standard Webhooks library) and shows it on a page.
type Receiver struct {
	mu   sync.Mutex
	got  []received
	hook *standardwebhooks.Webhook
}

type received struct {
	At       time.Time
	Kind     string
	Verified string
	Body     string
}

// NewReceiver checks webhooks with secret.
func NewReceiver(secret string) (*Receiver, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, err
	}
	return &Receiver{hook: wh}, nil
}

// ServeHTTP takes POST /teams, /slack and /webhook, and shows the rest.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		r.show(w)
		return
	}
	kind := map[string]string{"/teams": "Teams", "/slack": "Slack", "/webhook": "webhook"}[req.URL.Path]
	if kind == "" {
		http.NotFound(w, req)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	rec := received{At: time.Now(), Kind: kind, Body: pretty(body)}
	if kind == "webhook" {
		rec.Verified = "signature verified"
		if err := r.hook.Verify(body, req.Header); err != nil {
			rec.Verified = "signature REFUSED: " + err.Error()
			w.WriteHeader(http.StatusUnauthorized)
		}
	}
	r.mu.Lock()
	r.got = append([]received{rec}, r.got...)
	if len(r.got) > 200 {
		r.got = r.got[:200]
	}
	r.mu.Unlock()
	if rec.Verified == "" || rec.Verified == "signature verified" {
		w.WriteHeader(http.StatusAccepted)
	}
}

func pretty(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

var page = template.Must(template.New("p").Parse(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
<title>Fusebox demo receiver</title><style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;color:#1d2330}pre{background:#f4f5f7;padding:.8rem;overflow:auto;font-size:.8rem}h2{font-size:1rem}</style></head>
<body><h1>Fusebox demo receiver</h1><p>What Fusebox posted to the demo Teams, Slack and webhook channels, newest first (refreshes every 5 s).</p>
{{range .}}<h2>{{.Kind}} · {{.At.Format "15:04:05"}} {{if .Verified}}· {{.Verified}}{{end}}</h2><pre>{{.Body}}</pre>{{else}}<p>Nothing yet: trip a circuit, or press "Send a test" on the Channels page.</p>{{end}}
</body></html>`))

func (r *Receiver) show(w http.ResponseWriter) {
	r.mu.Lock()
	got := append([]received(nil), r.got...)
	r.mu.Unlock()
	var buf bytes.Buffer
	if err := page.Execute(&buf, got); err != nil {
		http.Error(w, fmt.Sprint(err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}
