// What Fusebox needs to find function apps: Reader on each subscription
// (or resource group) it should survey, and nothing more. Reader lists
// sites and their functions' configs; it cannot list app settings, so
// %Setting% values in bindings show as unresolved unless the guarded
// group also grants Microsoft.Web/sites/config/list/action (guard.bicep).
//
//   az deployment sub create -l westeurope -f deploy/azure/discovery.bicep \
//     -p principalId=<Fusebox's managed identity principal id>
targetScope = 'subscription'

param principalId string

// Reader, a built-in role.
var reader = 'acdd72a7-3385-48ef-bd42-f606fba81ae7'

resource assignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(subscription().id, principalId, reader)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', reader)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}
