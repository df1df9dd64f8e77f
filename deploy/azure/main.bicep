// Fusebox as an Azure Container App or an App Service web app, with a
// system-assigned managed identity, its own storage account's Table service
// (Storage Table Data Contributor) and the role to switch triggers in one
// guarded resource group; a Container App's logs go to a Log Analytics
// workspace, and an image in a private registry is pulled with a managed
// identity. main.json is the same template as ARM JSON, committed so that
// nobody needs the Bicep CLI: `az deployment group create --template-file
// deploy/azure/main.json` (docs/deploy.md). Keep the two in step:
// internal/deploytest proves they declare the same parameters, resources
// (type and API version), settings, secrets and outputs.

@maxLength(20)
param name string = 'fusebox'
param location string = resourceGroup().location
@allowed(['containerapp', 'appservice'])
param hosting string = 'containerapp'
@description('The Fusebox image, built from the repository\'s Dockerfile')
param image string
@description('FUSEBOX_BASE_URL: the https URL people use; empty: the default host name (Fusebox derives a Container App\'s from CONTAINER_APP_NAME and CONTAINER_APP_ENV_DNS_SUFFIX)')
param baseUrl string = ''
@secure()
@description('FUSEBOX_METRICS_TOKEN: the bearer token /metrics asks of the scraper; the default is random, so /metrics is closed until you set one you know')
param metricsToken string = newGuid()
@secure()
@minLength(32)
param sessionKey string
@secure()
param linkKeys string = ''
@secure()
param secretsKeys string = ''
@secure()
param localUsers string = ''
@description('App Service only: the client id of a Microsoft Entra app registration; turns on App Service Authentication with sign-in required and FUSEBOX_EASYAUTH_ENABLED. Empty: Fusebox\'s own sign-in.')
param easyAuthClientId string = ''
param smtpHost string = ''
param smtpUsername string = ''
@secure()
param smtpPassword string = ''
param mailFrom string = 'fusebox@example.com'
@description('A resource group (same subscription) whose function apps Fusebox switches; empty: assign the role yourself. Not Fusebox\'s own group: a role there would let Fusebox rewrite itself, and none is granted')
param guardedResourceGroup string = ''
@allowed(['appservice', 'containerapp'])
param guardedHosting string = 'appservice'
@description('An Azure Container Registry in this resource group that holds the image: Fusebox pulls it with a user-assigned identity given AcrPull on it, never a registry password. Empty: a public image')
param registryName string = ''
@description('OTEL_EXPORTER_OTLP_ENDPOINT: where Fusebox sends its own traces (an OpenTelemetry collector); empty: tracing off')
param otelEndpoint string = ''
@secure()
@description('OTEL_EXPORTER_OTLP_HEADERS: headers for that collector, such as its key (key=value,...)')
param otelHeaders string = ''
@description('Container Apps only: days the Log Analytics workspace keeps the app\'s logs')
@minValue(30)
param logRetentionDays int = 30

var storageName = toLower(take('${replace(name, '-', '')}${uniqueString(resourceGroup().id)}', 24))
var tableEndpoint = 'https://${storageName}.table.${environment().suffixes.storage}'
var storageTableDataContributor = '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
var containerAppsContributor = '358470bc-b998-42bd-ab17-a7e34c199c0f'
var acrPull = '7f951dda-4ed3-4680-a7ca-43fe172d538d'
var pulls = !empty(registryName)
var registryServer = '${registryName}${environment().suffixes.acrLoginServer}'
// Fusebox is never given a role on its own group: its identity could then
// rewrite its own settings, sign-in and storage.
var guardsOwnGroup = toLower(guardedResourceGroup) == toLower(resourceGroup().name)
var appName = '${name}-app'
// Routes with authentication of their own (keys, tokens, signed links) or
// none by design (probes, assets): App Service Authentication lets them by.
var openPaths = ['/healthz', '/readyz', '/metrics', '/static/*', '/api/v1/*', '/ping/*', '/badge/*', '/resume/*', '/v1/*', '/otlp/*', '/opentelemetry.proto.collector.trace.v1.TraceService/Export', '/opentelemetry.proto.collector.logs.v1.LogsService/Export', '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export']

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: storageName
  location: location
  sku: { name: 'Standard_ZRS' }
  kind: 'StorageV2'
  properties: { minimumTlsVersion: 'TLS1_2', allowSharedKeyAccess: false, allowBlobPublicAccess: false, supportsHttpsTrafficOnly: true }
}

// Without a workspace a Container Apps environment keeps no logs.
resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = if (hosting == 'containerapp') {
  name: '${name}-logs'
  location: location
  properties: { sku: { name: 'PerGB2018' }, retentionInDays: logRetentionDays }
}

resource env 'Microsoft.App/managedEnvironments@2024-03-01' = if (hosting == 'containerapp') {
  name: '${name}-env'
  location: location
  properties: {
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: { customerId: logs.properties.customerId, sharedKey: logs.listKeys().primarySharedKey }
    }
  }
}

// A private registry: the image is pulled with an identity that exists,
// and holds AcrPull, before the app is created (the app's own system
// identity does not exist until then).
resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' existing = {
  name: pulls ? registryName : 'none'
}

resource pullIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = if (pulls) {
  name: '${name}-pull'
  location: location
}

resource pullRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (pulls) {
  scope: registry
  name: guid(resourceGroup().id, registryName, '${name}-pull', acrPull)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', acrPull)
    principalId: pullIdentity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

var identity = pulls ? { type: 'SystemAssigned,UserAssigned', userAssignedIdentities: { '${pullIdentity.id}': {} } } : { type: 'SystemAssigned' }

resource containerApp 'Microsoft.App/containerApps@2024-03-01' = if (hosting == 'containerapp') {
  name: appName
  location: location
  identity: identity
  dependsOn: [pullRole]
  properties: {
    managedEnvironmentId: env.id
    configuration: {
      ingress: { external: true, targetPort: 8080, transport: 'http', allowInsecure: false }
      registries: pulls ? [{ server: registryServer, identity: pullIdentity.id }] : []
      secrets: [
        { name: 'session-key', value: sessionKey }
        { name: 'link-keys', value: linkKeys }
        { name: 'secrets-keys', value: secretsKeys }
        { name: 'local-users', value: localUsers }
        { name: 'smtp-password', value: smtpPassword }
        { name: 'metrics-token', value: metricsToken }
        { name: 'otel-headers', value: otelHeaders }
      ]
    }
    template: {
      containers: [{
        name: 'fusebox'
        image: image
        resources: { cpu: json('0.5'), memory: '1Gi' }
        env: [
          { name: 'FUSEBOX_ENV', value: 'production' }
          { name: 'FUSEBOX_HTTP_ADDR', value: ':8080' }
          { name: 'FUSEBOX_STORAGE_ACCOUNT_URL', value: tableEndpoint }
          { name: 'FUSEBOX_MIGRATE_ON_START', value: 'true' }
          { name: 'FUSEBOX_TRUST_PROXY_HEADERS', value: 'true' }
          { name: 'FUSEBOX_BASE_URL', value: baseUrl }
          { name: 'FUSEBOX_SESSION_KEY', secretRef: 'session-key' }
          { name: 'FUSEBOX_METRICS_TOKEN', secretRef: 'metrics-token' }
          { name: 'FUSEBOX_LINK_KEYS', secretRef: 'link-keys' }
          { name: 'FUSEBOX_SECRETS_KEYS', secretRef: 'secrets-keys' }
          { name: 'FUSEBOX_LOCAL_USERS', secretRef: 'local-users' }
          { name: 'FUSEBOX_SMTP_HOST', value: smtpHost }
          { name: 'FUSEBOX_SMTP_USERNAME', value: smtpUsername }
          { name: 'FUSEBOX_SMTP_PASSWORD', secretRef: 'smtp-password' }
          { name: 'FUSEBOX_MAIL_FROM', value: mailFrom }
          { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: otelEndpoint }
          { name: 'OTEL_EXPORTER_OTLP_HEADERS', secretRef: 'otel-headers' }
        ]
        probes: [
          { type: 'Liveness', httpGet: { path: '/healthz', port: 8080 } }
          { type: 'Readiness', httpGet: { path: '/readyz', port: 8080 } }
        ]
      }]
      scale: { minReplicas: 1, maxReplicas: 3 }
    }
  }
}

resource plan 'Microsoft.Web/serverfarms@2023-12-01' = if (hosting == 'appservice') {
  name: '${name}-plan'
  location: location
  sku: { name: 'B1' }
  kind: 'linux'
  properties: { reserved: true }
}

resource site 'Microsoft.Web/sites@2023-12-01' = if (hosting == 'appservice') {
  name: appName
  location: location
  kind: 'app,linux,container'
  identity: identity
  dependsOn: [pullRole]
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    siteConfig: {
      linuxFxVersion: 'DOCKER|${image}'
      acrUseManagedIdentityCreds: pulls
      acrUserManagedIdentityID: pulls ? pullIdentity.properties.clientId : ''
      alwaysOn: true
      healthCheckPath: '/readyz'
      minTlsVersion: '1.2'
      ftpsState: 'Disabled'
      appSettings: [
        { name: 'WEBSITES_PORT', value: '8080' }
        { name: 'FUSEBOX_ENV', value: 'production' }
        { name: 'FUSEBOX_HTTP_ADDR', value: ':8080' }
        { name: 'FUSEBOX_STORAGE_ACCOUNT_URL', value: tableEndpoint }
        { name: 'FUSEBOX_MIGRATE_ON_START', value: 'true' }
        { name: 'FUSEBOX_TRUST_PROXY_HEADERS', value: 'true' }
        { name: 'FUSEBOX_BASE_URL', value: empty(baseUrl) ? 'https://${appName}.azurewebsites.net' : baseUrl }
        { name: 'FUSEBOX_SESSION_KEY', value: sessionKey }
        { name: 'FUSEBOX_METRICS_TOKEN', value: metricsToken }
        { name: 'FUSEBOX_LINK_KEYS', value: linkKeys }
        { name: 'FUSEBOX_SECRETS_KEYS', value: secretsKeys }
        { name: 'FUSEBOX_LOCAL_USERS', value: localUsers }
        { name: 'FUSEBOX_EASYAUTH_ENABLED', value: string(!empty(easyAuthClientId)) }
        { name: 'FUSEBOX_SMTP_HOST', value: smtpHost }
        { name: 'FUSEBOX_SMTP_USERNAME', value: smtpUsername }
        { name: 'FUSEBOX_SMTP_PASSWORD', value: smtpPassword }
        { name: 'FUSEBOX_MAIL_FROM', value: mailFrom }
        { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: otelEndpoint }
        { name: 'OTEL_EXPORTER_OTLP_HEADERS', value: otelHeaders }
      ]
    }
  }
}

// With a client id, App Service Authentication is on before Fusebox takes
// a request: sign-in required, and the X-MS-CLIENT-PRINCIPAL header set by
// the platform alone (Fusebox refuses Easy Auth where WEBSITE_AUTH_ENABLED
// is not True).
resource siteAuth 'Microsoft.Web/sites/config@2023-12-01' = if (hosting == 'appservice' && !empty(easyAuthClientId)) {
  parent: site
  name: 'authsettingsV2'
  properties: {
    platform: { enabled: true }
    globalValidation: {
      requireAuthentication: true
      unauthenticatedClientAction: 'RedirectToLoginPage'
      redirectToProvider: 'azureactivedirectory'
      excludedPaths: openPaths
    }
    identityProviders: {
      azureActiveDirectory: {
        enabled: true
        registration: {
          clientId: easyAuthClientId
          openIdIssuer: '${environment().authentication.loginEndpoint}${subscription().tenantId}/v2.0'
        }
        validation: { allowedAudiences: [ 'api://${easyAuthClientId}', easyAuthClientId ] }
      }
    }
    login: { tokenStore: { enabled: false } }
    httpSettings: { requireHttps: true }
  }
}

var principalId = hosting == 'containerapp' ? containerApp.identity.principalId : site.identity.principalId

resource tableRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: storage
  name: guid(storage.id, appName, storageTableDataContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributor)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

module guard 'guard.bicep' = if (!empty(guardedResourceGroup) && !guardsOwnGroup) {
  name: '${name}-guard'
  scope: resourceGroup(empty(guardedResourceGroup) || guardsOwnGroup ? resourceGroup().name : guardedResourceGroup)
  params: { principalId: principalId, guardedHosting: guardedHosting, containerAppsContributor: containerAppsContributor }
}

output url string = hosting == 'containerapp' ? 'https://${containerApp.properties.configuration.ingress.fqdn}' : 'https://${appName}.azurewebsites.net'
output principalId string = principalId
output tableEndpoint string = tableEndpoint
output guard string = empty(guardedResourceGroup) ? 'No role granted: no guardedResourceGroup given (docs/deploy.md says which to grant).' : guardsOwnGroup ? 'No role granted: guardedResourceGroup is Fusebox\'s own group. Put the function apps in another group.' : 'Granted on ${guardedResourceGroup}: ${guardedHosting == 'containerapp' ? 'Container Apps Contributor' : 'Fusebox trigger switch (a custom role)'}.'
