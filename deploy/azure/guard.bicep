// What lets Fusebox switch triggers, in one guarded resource group.
//
// Function apps on App Service (and Flex Consumption) get a custom role of
// exactly the operations Fusebox calls (internal/switches/appservice/role.go
// lists them, and a test records them): read a site and its slots, list and
// write their app settings, list their functions, and read the master key
// to run a function. Website Contributor would also hand over publishing
// credentials, deployments and deletion of every site in the group.
// Container Apps get Container Apps Contributor: switching there is an
// update of the app itself, which is all a narrower role would be.
param principalId string
param guardedHosting string
param containerAppsContributor string

var switchActions = [
  'Microsoft.Web/sites/read'
  'Microsoft.Web/sites/config/read'
  'Microsoft.Web/sites/config/list/action'
  'Microsoft.Web/sites/config/write'
  'Microsoft.Web/sites/functions/read'
  'Microsoft.Web/sites/host/listkeys/action'
  'Microsoft.Web/sites/slots/read'
  'Microsoft.Web/sites/slots/config/list/action'
  'Microsoft.Web/sites/slots/config/write'
  'Microsoft.Web/sites/slots/functions/read'
  'Microsoft.Web/sites/slots/host/listkeys/action'
]

resource switchRole 'Microsoft.Authorization/roleDefinitions@2022-04-01' = if (guardedHosting != 'containerapp') {
  name: guid(resourceGroup().id, 'fusebox-trigger-switch')
  properties: {
    roleName: 'Fusebox trigger switch (${resourceGroup().name})'
    description: 'Switch Azure Functions triggers on and off through app settings, and run a function once.'
    type: 'CustomRole'
    permissions: [
      {
        actions: switchActions
        notActions: []
      }
    ]
    assignableScopes: [
      resourceGroup().id
    ]
  }
}

var roleId = guardedHosting == 'containerapp' ? subscriptionResourceId('Microsoft.Authorization/roleDefinitions', containerAppsContributor) : switchRole.id

resource assignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(resourceGroup().id, principalId, guardedHosting)
  properties: {
    roleDefinitionId: roleId
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}
