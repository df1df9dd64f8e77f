package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/config"
)

const hash = "$2a$10$TQDQa6P/ZiMDvbHs9Sb4e.M8f2/Tc82NJL5ADyKFY7DRe3XI4gtM6"

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func valid() map[string]string {
	return map[string]string{
		"FUSEBOX_STORAGE_CONNECTION_STRING": "UseDevelopmentStorage=true",
		"FUSEBOX_SESSION_KEY":               strings.Repeat("k", 32),
		"FUSEBOX_LOCAL_USERS":               "alice:operator:" + hash + ",bob:viewer:" + hash,
		"FUSEBOX_BASE_URL":                  "https://fusebox.example.com",
		"FUSEBOX_METRICS_TOKEN":             "metrics-token-0123456789",
	}
}

func TestDefaults(t *testing.T) {
	c, err := config.Load(env(valid()))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Env", c.Env, config.Production},
		{"LogLevel", c.LogLevel, "info"},
		{"HTTPAddr", c.HTTPAddr, "127.0.0.1:8080"},
		{"BaseURL", c.BaseURL.String(), "https://fusebox.example.com"},
		{"MaxBodyBytes", c.MaxBodyBytes, int64(1 << 20)},
		{"TrustProxyHeaders", c.TrustProxyHeaders, false},
		{"ShutdownGracePeriod", c.ShutdownGracePeriod, 15 * time.Second},
		{"MigrateOnStart", c.MigrateOnStart, true},
		{"Storage.ConnectionString", c.Storage.ConnectionString.Reveal(), config.DevelopmentStorage},
		{"Storage.TablePrefix", c.Storage.TablePrefix, "fusebox"},
		{"Session.TTL", c.Session.TTL, 12 * time.Hour},
		{"LocalUsers", len(c.LocalUsers), 2},
		{"LocalUsers[1].Role", c.LocalUsers[1].Role, "viewer"},
		{"OIDC", c.OIDC == nil, true},
		{"EasyAuth", c.EasyAuth, false},
		{"RoleClaim", c.RoleClaim, "roles"},
		{"LoginRateLimit", c.LoginRateLimit, 1.0},
		{"SecureCookies", c.SecureCookies(), true},
		{"PingIDGrace", c.PingIDGrace, 30 * 24 * time.Hour},
		{"MetricsOpen", c.MetricsOpen, false},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestEveryProblemIsNamed(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]string
		want []string // each must appear in the error
	}{
		{"nothing set", map[string]string{"FUSEBOX_STORAGE_CONNECTION_STRING": "", "FUSEBOX_SESSION_KEY": "", "FUSEBOX_LOCAL_USERS": ""},
			[]string{"FUSEBOX_STORAGE_CONNECTION_STRING: is required", "FUSEBOX_SESSION_KEY: must be at least 32", "no sign-in method"}},
		{"both storage settings", map[string]string{"FUSEBOX_STORAGE_ACCOUNT_URL": "https://a.table.core.windows.net"}, []string{"not both"}},
		{"connection string without key", map[string]string{"FUSEBOX_STORAGE_CONNECTION_STRING": "AccountName=a;TableEndpoint=https://a"}, []string{"neither AccountKey nor SharedAccessSignature"}},
		{"connection string garbage", map[string]string{"FUSEBOX_STORAGE_CONNECTION_STRING": "hello"}, []string{"is not a connection string"}},
		{"bad account URL", map[string]string{"FUSEBOX_STORAGE_CONNECTION_STRING": "", "FUSEBOX_STORAGE_ACCOUNT_URL": "a.table"}, []string{"FUSEBOX_STORAGE_ACCOUNT_URL: must be the table endpoint"}},
		{"bad listen address", map[string]string{"FUSEBOX_HTTP_ADDR": "8080"}, []string{"FUSEBOX_HTTP_ADDR"}},
		{"bad base URL", map[string]string{"FUSEBOX_BASE_URL": "fusebox.example.com/x"}, []string{"FUSEBOX_BASE_URL"}},
		{"bad duration", map[string]string{"FUSEBOX_SESSION_TTL": "forever"}, []string{"FUSEBOX_SESSION_TTL: must be a duration"}},
		{"bad bool", map[string]string{"FUSEBOX_EASYAUTH_ENABLED": "yes please"}, []string{"FUSEBOX_EASYAUTH_ENABLED: must be true or false"}},
		{"bad prefix", map[string]string{"FUSEBOX_TABLE_PREFIX": "my-prefix"}, []string{"FUSEBOX_TABLE_PREFIX"}},
		{"bad env", map[string]string{"FUSEBOX_ENV": "staging"}, []string{"FUSEBOX_ENV"}},
		{"bad local user", map[string]string{"FUSEBOX_LOCAL_USERS": "alice:root:" + hash + ",bob:viewer:plaintext,carol,dan:admin@billing:" + hash + ",eve:operator@Billing:" + hash},
			[]string{"entry 1 (alice): the role must be admin, viewer or operator, or ROLE@TEAM joined by +", "entry 2 (bob): the password must be a bcrypt hash", "entry 3 must be name:role:bcrypt-hash",
				`entry 4 (dan): "admin@billing": a role on a team is viewer or operator`, `entry 5 (eve): "operator@Billing": "Billing" is not a team's name`}},
		{"Azure alerts half configured", map[string]string{"FUSEBOX_AZURE_ALERTS_TENANT": "6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "FUSEBOX_AZURE_ALERTS_SECRET": "short"},
			[]string{"FUSEBOX_AZURE_ALERTS_TENANT: and FUSEBOX_AZURE_ALERTS_AUDIENCE are set together", "FUSEBOX_AZURE_ALERTS_SECRET: must be 32 to 128"}},
		{"Azure alerts of no tenant", map[string]string{"FUSEBOX_AZURE_ALERTS_TENANT": "contoso", "FUSEBOX_AZURE_ALERTS_AUDIENCE": "api://fusebox"},
			[]string{"FUSEBOX_AZURE_ALERTS_TENANT: must be the tenant's id, a GUID"}},
		// Any service principal of the tenant can get a token for the
		// audience: a secure webhook that pins no caller does not start.
		{"Azure alerts from anyone of the tenant", map[string]string{"FUSEBOX_AZURE_ALERTS_TENANT": "6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "FUSEBOX_AZURE_ALERTS_AUDIENCE": "api://fusebox"},
			[]string{"FUSEBOX_AZURE_ALERTS_ROLE: or FUSEBOX_AZURE_ALERTS_APPID must be set with FUSEBOX_AZURE_ALERTS_TENANT", "any service principal of the tenant",
				"set FUSEBOX_AZURE_ALERTS_APPID=461e8683-5575-4561-ac7f-899cc907d62a"}},
		{"Azure alerts from no application", map[string]string{"FUSEBOX_AZURE_ALERTS_TENANT": "6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "FUSEBOX_AZURE_ALERTS_AUDIENCE": "api://fusebox",
			"FUSEBOX_AZURE_ALERTS_APPID": "action-groups"}, []string{`FUSEBOX_AZURE_ALERTS_APPID: must be the calling application's id, a GUID`}},
		{"bad team member", map[string]string{"FUSEBOX_TEAM_MEMBERS": "billing:admin:g-1,Orders:viewer:g-2,orders:viewer"},
			[]string{"entry 1 (billing): a role on a team is viewer or operator", `entry 2: "Orders" is not a team's name`, "entry 3 must be team:role:who"}},
		{"duplicate user", map[string]string{"FUSEBOX_LOCAL_USERS": "alice:viewer:" + hash + ",Alice:operator:" + hash}, []string{"listed twice"}},
		{"OIDC half configured", map[string]string{"FUSEBOX_OIDC_ISSUER": "https://login.example.com"},
			[]string{"FUSEBOX_OIDC_CLIENT_ID: is required", "FUSEBOX_OIDC_CLIENT_SECRET: is required", "FUSEBOX_OPERATOR_CLAIM_VALUES"}},
		{"OIDC secret without issuer", map[string]string{"FUSEBOX_OIDC_CLIENT_SECRET": "x"}, []string{"FUSEBOX_OIDC_ISSUER: is required"}},
		{"Easy Auth without role values", map[string]string{"FUSEBOX_EASYAUTH_ENABLED": "true", "WEBSITE_AUTH_ENABLED": "True"}, []string{"FUSEBOX_OPERATOR_CLAIM_VALUES"}},
		// A forged X-MS-CLIENT-PRINCIPAL is believed only behind a platform
		// that strips and sets it: without one, Fusebox does not start.
		{"Easy Auth where App Service authentication is off", map[string]string{"FUSEBOX_EASYAUTH_ENABLED": "true", "FUSEBOX_OPERATOR_CLAIM_VALUES": "Fusebox.Operator"},
			[]string{"FUSEBOX_EASYAUTH_ENABLED: App Service authentication is off (WEBSITE_AUTH_ENABLED is not True)"}},
		{"Easy Auth with authentication said off", map[string]string{"FUSEBOX_EASYAUTH_ENABLED": "true", "WEBSITE_AUTH_ENABLED": "False", "FUSEBOX_OPERATOR_CLAIM_VALUES": "Fusebox.Operator"},
			[]string{"WEBSITE_AUTH_ENABLED is not True"}},
		{"Easy Auth on Container Apps", map[string]string{"FUSEBOX_EASYAUTH_ENABLED": "true", "WEBSITE_AUTH_ENABLED": "True", "CONTAINER_APP_NAME": "fusebox", "FUSEBOX_OPERATOR_CLAIM_VALUES": "Fusebox.Operator"},
			[]string{"FUSEBOX_EASYAUTH_ENABLED: Container Apps does not tell"}},
		{"OIDC role kept too long", map[string]string{"FUSEBOX_OIDC_ISSUER": "https://login.example.com", "FUSEBOX_OIDC_CLIENT_ID": "c", "FUSEBOX_OIDC_CLIENT_SECRET": "s",
			"FUSEBOX_OPERATOR_CLAIM_VALUES": "ops", "FUSEBOX_OIDC_ROLE_MAX_AGE": "12h"}, []string{"FUSEBOX_OIDC_ROLE_MAX_AGE: must be between 1s and 1h"}},
		{"short secrets key", map[string]string{"FUSEBOX_SECRETS_KEYS": "k1:short"}, []string{"FUSEBOX_SECRETS_KEYS: entry 1 (k1): the key must be at least 32 characters"}},
		{"bad cloud", map[string]string{"FUSEBOX_AZURE_CLOUD": "germany"}, []string{"FUSEBOX_AZURE_CLOUD: must be public, usgov or china"}},
		{"bad egress range", map[string]string{"FUSEBOX_EGRESS_ALLOW_CIDRS": "10.0.0.0/8,private"}, []string{"FUSEBOX_EGRESS_ALLOW_CIDRS: must be address ranges"}},
		{"bad subscription", map[string]string{"FUSEBOX_DISCOVER_SUBSCRIPTIONS": "0b1f6471-1bf0-4dda-aec3-111122223333, my-subscription"}, []string{"FUSEBOX_DISCOVER_SUBSCRIPTIONS: must be subscription ids (GUIDs)"}},
		{"bad SMTP port", map[string]string{"FUSEBOX_SMTP_PORT": "smtp"}, []string{"FUSEBOX_SMTP_PORT: must be a port number, such as 587"}},
		{"bad reminder count", map[string]string{"FUSEBOX_REMINDER_MAX": "many"}, []string{"FUSEBOX_REMINDER_MAX: must be a whole number of reminders"}},
		{"link lifetime over a week", map[string]string{"FUSEBOX_LINK_TTL": "200h"}, []string{"FUSEBOX_LINK_TTL: must be between 1m and 168h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := valid()
			for k, v := range tt.set {
				kv[k] = v
			}
			_, err := config.Load(env(kv))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestSecretsNeverPrint(t *testing.T) {
	kv := valid()
	kv["FUSEBOX_STORAGE_CONNECTION_STRING"] = "AccountName=a;AccountKey=SUPERSECRETKEY;TableEndpoint=https://a.table.core.windows.net"
	kv["FUSEBOX_SESSION_KEY"] = strings.Repeat("S", 40)
	c, err := config.Load(env(kv))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, *c)
		if strings.Contains(out, "SUPERSECRETKEY") || strings.Contains(out, strings.Repeat("S", 40)) || strings.Contains(out, hash) {
			t.Errorf("%s printed a secret: %s", format, out)
		}
	}
	kv["FUSEBOX_STORAGE_CONNECTION_STRING"] = "AccountName=a;AccountKey=SUPERSECRETKEY;TableEndpoint=not a url"
	_, err = config.Load(env(kv))
	if err == nil || strings.Contains(err.Error(), "SUPERSECRETKEY") {
		t.Errorf("error for a bad connection string quoted its key: %v", err)
	}
}

func TestHTTPSBaseURLMakesCookiesSecure(t *testing.T) {
	kv := valid()
	kv["FUSEBOX_BASE_URL"] = "https://fusebox.example.com/"
	c, err := config.Load(env(kv))
	if err != nil {
		t.Fatal(err)
	}
	if !c.SecureCookies() || c.BaseURL.String() != "https://fusebox.example.com" {
		t.Errorf("SecureCookies = %v, BaseURL = %s", c.SecureCookies(), c.BaseURL)
	}
}

// TestProductionNeedsHTTPSAndAClosedMetricsPage: production refuses an
// http base URL (cookies would lose Secure, links would point at
// localhost) and an open /metrics nobody chose; App Service and Container
// Apps give the URL themselves.
func TestProductionNeedsHTTPSAndAClosedMetricsPage(t *testing.T) {
	cases := []struct {
		name    string
		set     map[string]string
		unset   []string
		wantErr string
		wantURL string
	}{
		{"an http base URL", map[string]string{"FUSEBOX_BASE_URL": "http://fusebox.example.com"}, nil, "FUSEBOX_BASE_URL: must be the https URL", ""},
		{"no base URL, no platform", nil, []string{"FUSEBOX_BASE_URL"}, "FUSEBOX_BASE_URL: must be the https URL", ""},
		{"Container Apps gives it", map[string]string{"CONTAINER_APP_NAME": "fusebox-app", "CONTAINER_APP_ENV_DNS_SUFFIX": "kindstone-1a2b.westeurope.azurecontainerapps.io"}, []string{"FUSEBOX_BASE_URL"},
			"", "https://fusebox-app.kindstone-1a2b.westeurope.azurecontainerapps.io"},
		{"App Service gives it", map[string]string{"WEBSITE_HOSTNAME": "fusebox-app.azurewebsites.net"}, []string{"FUSEBOX_BASE_URL"}, "", "https://fusebox-app.azurewebsites.net"},
		{"an open /metrics nobody chose", nil, []string{"FUSEBOX_METRICS_TOKEN"}, "FUSEBOX_METRICS_TOKEN: is needed in production", ""},
		{"an open /metrics stated", map[string]string{"FUSEBOX_METRICS_OPEN": "true"}, []string{"FUSEBOX_METRICS_TOKEN"}, "", "https://fusebox.example.com"},
		{"development may do either", map[string]string{"FUSEBOX_ENV": "development"}, []string{"FUSEBOX_METRICS_TOKEN", "FUSEBOX_BASE_URL"}, "", "http://127.0.0.1:8080"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kv := valid()
			for _, k := range c.unset {
				delete(kv, k)
			}
			for k, v := range c.set {
				kv[k] = v
			}
			cfg, err := config.Load(env(kv))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.BaseURL.String() != c.wantURL {
				t.Errorf("BaseURL %s, want %s", cfg.BaseURL, c.wantURL)
			}
		})
	}
}

// A secure webhook pinned to its caller by application, by role, or both,
// starts, and keeps what it was given.
func TestASecureWebhookPinnedToItsCallerStarts(t *testing.T) {
	for name, pin := range map[string]map[string]string{
		"application": {"FUSEBOX_AZURE_ALERTS_APPID": "461e8683-5575-4561-ac7f-899cc907d62a"},
		"role":        {"FUSEBOX_AZURE_ALERTS_ROLE": "ActionGroupsSecureWebhook"},
		"both":        {"FUSEBOX_AZURE_ALERTS_APPID": "461e8683-5575-4561-ac7f-899cc907d62a", "FUSEBOX_AZURE_ALERTS_ROLE": "ActionGroupsSecureWebhook"},
	} {
		kv := valid()
		kv["FUSEBOX_AZURE_ALERTS_TENANT"], kv["FUSEBOX_AZURE_ALERTS_AUDIENCE"] = "6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "api://fusebox"
		for k, v := range pin {
			kv[k] = v
		}
		c, err := config.Load(env(kv))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		e := c.AzureAlertsEntra
		want := config.AzureAlertsEntra{Tenant: "6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b", Audience: "api://fusebox", Issuer: "https://sts.windows.net/6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b/",
			KeysURL: "https://login.microsoftonline.com/6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b/discovery/v2.0/keys", Role: pin["FUSEBOX_AZURE_ALERTS_ROLE"], AppID: pin["FUSEBOX_AZURE_ALERTS_APPID"]}
		if e == nil || *e != want {
			t.Errorf("%s: %+v, want %+v", name, e, want)
		}
	}
}
