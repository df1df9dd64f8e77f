package circuit

import (
	"slices"
	"strconv"
	"strings"
)

// SwitchCost says, before a trip and with its notice, what switching one
// function's trigger costs the rest of the app: the trigger is an app
// setting (or a container's environment variable), and changing one
// restarts the app, so every other function restarts with it and batches
// in flight are handed out again. others are the app's other functions,
// nil when they are not known.
func (a App) SwitchCost(function string, others []string) string {
	others = slices.DeleteFunc(slices.Clone(others), func(f string) bool { return f == function })
	slices.Sort(others)
	who := "every other function of the app restarts with it"
	switch n := len(others); {
	case others == nil:
	case n == 0:
		who = "the app has no other function"
	case n <= 8:
		who = strings.Join(others, ", ") + " restart with it"
	default:
		who = strings.Join(others[:8], ", ") + " and " + strconv.Itoa(n-8) + " more restart with it"
	}
	replay := "; batches in flight are handed out again, at least once (a batch half done is processed twice)"
	switch {
	case a.Switch == SwitchLocal:
		return "Fusebox writes local.settings.json and the Functions host restarts: " + who + replay + "."
	case a.Switch == SwitchContainerApp:
		return "Switching sets an environment variable of the container app, which starts a new revision: its replicas restart, " + who + replay + "."
	case a.Hosting.Plan == PlanFlex && a.Hosting.RollingUpdates:
		return "Flex Consumption with rolling updates: instances take the settings change one by one, each finishing its executions first, so the app keeps running while it rolls out."
	}
	return "Writing the app's settings restarts the app: " + who + replay + "."
}
