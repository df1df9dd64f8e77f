package eventhub

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/eventhub/armeventhub"
)

// A hub's retention is its description's hours when it deletes by time,
// else the older days; a compacted hub, or nothing readable, is no
// retention, said in words.
func TestAHubsRetentionIsReadAsARMGivesIt(t *testing.T) {
	del, compact := armeventhub.CleanupPolicyRetentionDescriptionDelete, armeventhub.CleanupPolicyRetentionDescriptionCompact
	for _, tc := range []struct {
		name string
		p    *armeventhub.Properties
		want time.Duration
		says string
	}{
		{"hours", &armeventhub.Properties{RetentionDescription: &armeventhub.RetentionDescription{CleanupPolicy: &del, RetentionTimeInHours: to.Ptr[int64](36)}}, 36 * time.Hour, ""},
		{"days only", &armeventhub.Properties{MessageRetentionInDays: to.Ptr[int64](7)}, 7 * 24 * time.Hour, ""},
		{"compacted", &armeventhub.Properties{RetentionDescription: &armeventhub.RetentionDescription{CleanupPolicy: &compact, RetentionTimeInHours: to.Ptr[int64](1 << 62)}}, 0, "compacted"},
		{"out of range", &armeventhub.Properties{MessageRetentionInDays: to.Ptr[int64](400)}, 0, "no retention"},
		{"nothing", nil, 0, "says nothing"},
	} {
		got, err := keepOf(tc.p)
		if got != tc.want || (tc.says == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("%s: %v, %v; want %v and %q", tc.name, got, err, tc.want, tc.says)
		}
	}
}

// ARM's own words never reach the page: a refusal says what to grant.
func TestARMsAnswerStaysOutOfTheWords(t *testing.T) {
	err := armError("read event hub orders", &azcore.ResponseError{StatusCode: http.StatusForbidden, ErrorCode: "AuthorizationFailed: secret-ish detail"})
	if !strings.Contains(err.Error(), "Reader on the Event Hubs namespace") || strings.Contains(err.Error(), "secret-ish") {
		t.Errorf("a refusal reads %q", err)
	}
	if err := armError("list", errors.New("dial tcp: the server said something long")); strings.Contains(err.Error(), "the server said") {
		t.Errorf("a failure reads %q", err)
	}
}
