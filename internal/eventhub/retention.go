package eventhub

// An event hub's message retention, read through ARM, for the countdown
// of a switched-off trigger's waiting events when the circuit sets none.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/eventhub/armeventhub"

	"github.com/fusebox/fusebox/internal/egress"
)

// ARMRetention reads hubs' retention with Fusebox's ARM identity, which
// then needs Reader on the namespace (Microsoft.EventHub/namespaces/read
// and its event hubs' read). Answers are kept for TTL, failures a minute:
// a page view or a watch pass asks ARM at most that often per hub.
type ARMRetention struct {
	Credential azcore.TokenCredential
	Options    *arm.ClientOptions
	TTL        time.Duration // default an hour

	mu    sync.Mutex
	cache map[string]kept
}

type kept struct {
	keep time.Duration
	err  error
	at   time.Time
}

// maxKept bounds the hubs kept.
const maxKept = 10000

// Retention is how long hub, in the namespace whose host name is
// namespace (orders.servicebus.windows.net), keeps an event, as ARM says
// in subscription. A compacted hub keeps events by key, not by time: an
// error says so.
func (r *ARMRetention) Retention(ctx context.Context, subscription, namespace, hub string) (time.Duration, error) {
	key := strings.ToLower(subscription + "|" + namespace + "|" + hub)
	ttl := r.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	r.mu.Lock()
	k, ok := r.cache[key]
	r.mu.Unlock()
	if ok && (time.Since(k.at) < ttl && k.err == nil || time.Since(k.at) < time.Minute) {
		return k.keep, k.err
	}
	keep, err := r.read(ctx, subscription, namespace, hub)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil || len(r.cache) >= maxKept {
		r.cache = map[string]kept{}
	}
	r.cache[key] = kept{keep: keep, err: err, at: time.Now()}
	return keep, err
}

func (r *ARMRetention) read(ctx context.Context, subscription, namespace, hub string) (time.Duration, error) {
	name, _, _ := strings.Cut(namespace, ".")
	if subscription == "" || name == "" {
		return 0, errors.New("the app names no subscription, or the checkpoints no namespace")
	}
	nc, err := armeventhub.NewNamespacesClient(subscription, r.Credential, r.Options)
	if err != nil {
		return 0, errors.New("the ARM client could not be made")
	}
	group := ""
	for p := nc.NewListPager(nil); p.More() && group == ""; {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, armError("list the subscription's Event Hubs namespaces", err)
		}
		for _, ns := range page.Value {
			if ns != nil && ns.Name != nil && ns.ID != nil && strings.EqualFold(*ns.Name, name) {
				if id, err := arm.ParseResourceID(*ns.ID); err == nil {
					group = id.ResourceGroupName
				}
			}
		}
	}
	if group == "" {
		return 0, fmt.Errorf("ARM lists no namespace %s in the app's subscription to Fusebox's identity", name)
	}
	hc, err := armeventhub.NewEventHubsClient(subscription, r.Credential, r.Options)
	if err != nil {
		return 0, errors.New("the ARM client could not be made")
	}
	resp, err := hc.Get(ctx, group, name, hub, nil)
	if err != nil {
		return 0, armError("read event hub "+hub, err)
	}
	return keepOf(resp.Properties)
}

// keepOf reads an event hub's retention: the retention description's
// hours when it deletes by time, else the older days.
func keepOf(p *armeventhub.Properties) (time.Duration, error) {
	if p == nil {
		return 0, errors.New("ARM says nothing of the hub's retention")
	}
	if d := p.RetentionDescription; d != nil {
		if d.CleanupPolicy != nil && *d.CleanupPolicy == armeventhub.CleanupPolicyRetentionDescriptionCompact {
			return 0, errors.New("the hub is compacted: it keeps the latest event of each key, not events for a time")
		}
		if d.RetentionTimeInHours != nil && *d.RetentionTimeInHours > 0 && *d.RetentionTimeInHours <= 90*24 {
			return time.Duration(*d.RetentionTimeInHours) * time.Hour, nil
		}
	}
	if p.MessageRetentionInDays != nil && *p.MessageRetentionInDays > 0 && *p.MessageRetentionInDays <= 90 {
		return time.Duration(*p.MessageRetentionInDays) * 24 * time.Hour, nil
	}
	return 0, errors.New("ARM gives no retention Fusebox can read for the hub")
}

// armError words a failed ARM read without ARM's own text.
func armError(what string, err error) error {
	var re *azcore.ResponseError
	if errors.As(err, &re) && (re.StatusCode == http.StatusForbidden || re.StatusCode == http.StatusUnauthorized) {
		return fmt.Errorf("not allowed to %s: give Fusebox's ARM identity Reader on the Event Hubs namespace, or set the hub's retention on the circuit", what)
	}
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return fmt.Errorf("ARM did not find what Fusebox asked for when it tried to %s", what)
	}
	return fmt.Errorf("could not %s: %s", what, egress.Class(err))
}
