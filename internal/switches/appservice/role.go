package appservice

// RoleActions are the ARM operations the switch, the runner and the
// function listing call on a guarded app, and all that the custom role of
// deploy/azure/guard.bicep grants. Website Contributor would grant every
// other operation of every site in the group too: publishing credentials,
// deployments, deletion. TestEveryCallIsInTheGuardRole records the calls;
// the deploy test holds the template to this list.
var RoleActions = []string{
	"Microsoft.Web/sites/read",
	"Microsoft.Web/sites/config/read",        // slot-sticky setting names
	"Microsoft.Web/sites/config/list/action", // app settings, read to merge
	"Microsoft.Web/sites/config/write",       // app settings, slot-sticky names
	"Microsoft.Web/sites/functions/read",
	"Microsoft.Web/sites/host/listkeys/action", // the master key, for Run
	"Microsoft.Web/sites/slots/read",
	"Microsoft.Web/sites/slots/config/list/action",
	"Microsoft.Web/sites/slots/config/write",
	"Microsoft.Web/sites/slots/functions/read",
	"Microsoft.Web/sites/slots/host/listkeys/action",
}
