package audit

import (
	"fmt"
	"strings"
)

// MaxReason is the longest reason a person may give for an action.
const MaxReason = 500

// CheckReason says what is wrong with the reason a person gives for an
// action, or "": it is 1 to MaxReason characters, not blank. keptIn says
// where it is kept, for the message ("the audit log").
func CheckReason(reason, keptIn string) string {
	if strings.TrimSpace(reason) == "" || len(reason) > MaxReason {
		return fmt.Sprintf("Say why (1 to %d characters): %s keeps it.", MaxReason, keptIn)
	}
	return ""
}
