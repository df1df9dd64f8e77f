package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/fusebox/fusebox/internal/azalerts"
)

// AlertsSecret is the demo's action-group webhook secret. It is public, in
// the source, so it must never take alerts from Azure.
const AlertsSecret = "demo-alerts-secret-not-for-azure-0123456789"

// AlertRule is the demo's Azure Monitor rule on the orders store: the
// demo's ProcessOrders and TakeOrders name it, so its "Fired" trips both.
const AlertRule = "/subscriptions/7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b/resourceGroups/rg-orders/providers/microsoft.insights/metricAlerts/orders-store-down"

// NewAlertID is a new alert instance's id, as Azure Monitor makes one per
// firing.
func NewAlertID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "/subscriptions/7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b/providers/Microsoft.AlertsManagement/alerts/" + hex.EncodeToString(b)
}

// AlertPayload is the demo rule's alert id in condition (Fired or
// Resolved), in the common alert schema, as an action group posts it.
func AlertPayload(id, condition string, fired, resolved time.Time) []byte {
	essentials := map[string]any{
		"alertId": id, "alertRule": "orders-store-down", "alertRuleID": AlertRule, "severity": "Sev1", "signalType": "Metric",
		"monitorCondition": condition, "monitoringService": "Platform",
		"alertTargetIDs":    []string{"/subscriptions/7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b/resourcegroups/rg-orders/providers/microsoft.documentdb/databaseaccounts/orders-store"},
		"firedDateTime":     fired.UTC().Format(time.RFC3339Nano),
		"description":       "The orders store answers fewer than 90 % of requests",
		"essentialsVersion": "1.0", "alertContextVersion": "1.0",
	}
	if condition == "Resolved" {
		essentials["resolvedDateTime"] = resolved.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(map[string]any{"schemaId": "azureMonitorCommonAlertSchema", "data": map[string]any{"essentials": essentials, "alertContext": map[string]any{}}})
	return b
}

// PostAlert posts an alert to the Fusebox at base through the demo's
// webhook, and returns its answer.
func PostAlert(ctx context.Context, base string, payload []byte) (int, string, error) {
	return postAlert(ctx, strings.TrimSuffix(base, "/")+"/hooks/azure-monitor/"+AlertsSecret, "", payload)
}

// postAlert posts payload to url, with a bearer token when one is given.
func postAlert(ctx context.Context, url, token string, payload []byte) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("demo: post the alert: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body), nil
}

// The demo's stand-in for an Entra ID tenant that signs an action group's
// secure webhook tokens: `make run` points Fusebox's secure webhook at it
// (FUSEBOX_AZURE_ALERTS_TENANT, _AUDIENCE, _KEYS_URL), and the demo host's
// page posts the orders store's alert with a token it signs, as Azure
// Monitor's action group does with the tenant's. Its key is the demo's,
// kept in .dev: it must never be trusted outside the demo.
//
// Its tokens name the caller as Azure's do: the action groups' application
// (appid, azalerts.ActionGroupsAppID) holding the app role AlertRole, which
// `make run` pins (FUSEBOX_AZURE_ALERTS_APPID, _ROLE).
const (
	AlertTenant   = "5e1f0c2a-0d7b-4f3e-9c1a-6b8d2e4f7a90"
	AlertAudience = "api://fusebox-demo-alerts"
	AlertRole     = "ActionGroupsSecureWebhook"
	AlertKeysPath = "/alerts/keys"
	alertKeyID    = "fusebox-demo-alerts"
)

// AlertSigner signs the demo's secure webhook tokens and publishes its
// key.
type AlertSigner struct {
	key    *rsa.PrivateKey
	signer jose.Signer
}

// LoadAlertSigner reads the demo's signing key from path, or makes one
// and keeps it there: the demo host restarts whenever its triggers are
// switched, and a token signed after a restart must still verify against
// the keys Fusebox read before it.
func LoadAlertSigner(path string) (*AlertSigner, error) {
	var key *rsa.PrivateKey
	if b, err := os.ReadFile(path); err == nil {
		block, _ := pem.Decode(b)
		if block == nil {
			return nil, fmt.Errorf("demo: %s holds no PEM key: delete it to make another", path)
		}
		if key, err = x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
			return nil, fmt.Errorf("demo: %s: %w", path, err)
		}
	} else {
		if key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
			return nil, err
		}
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", alertKeyID))
	if err != nil {
		return nil, err
	}
	return &AlertSigner{key: key, signer: signer}, nil
}

// Keys answers the tenant's JWKS, as login.microsoftonline.com does.
func (s *AlertSigner) Keys(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &s.key.PublicKey, KeyID: alertKeyID, Algorithm: "RS256", Use: "sig"}}})
}

// Token is an access token for the demo's app registration, as an
// action group's secure webhook is sent one (v1 issuer), valid an hour.
func (s *AlertSigner) Token(now time.Time) (string, error) {
	return jwt.Signed(s.signer).Claims(map[string]any{
		"iss": "https://sts.windows.net/" + AlertTenant + "/", "aud": AlertAudience, "tid": AlertTenant, "ver": "1.0",
		"appid": azalerts.ActionGroupsAppID, "roles": []string{AlertRole},
		"sub": "azure-monitor-action-group", "iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
	}).Serialize()
}

// PostSecureAlert posts an alert to Fusebox's secure webhook with token.
func PostSecureAlert(ctx context.Context, base, token string, payload []byte) (int, string, error) {
	return postAlert(ctx, strings.TrimSuffix(base, "/")+"/hooks/azure-monitor", token, payload)
}

// AlertState is the file keeping the last fired alert's id and time, so
// that "resolved" names the alert "fired" made (the demo host's page and
// `fusebox-dev demo-alert` share it).
type AlertState string

// Next is the alert instance condition ("Fired" or "Resolved") is about,
// and when it fired: a new one for Fired (kept), the last one for Resolved.
func (s AlertState) Next(condition string, now time.Time) (id string, fired time.Time, err error) {
	if condition == "Fired" {
		id, fired = NewAlertID(), now
		return id, fired, os.WriteFile(string(s), []byte(id+" "+fired.UTC().Format(time.RFC3339Nano)+"\n"), 0o600)
	}
	b, err := os.ReadFile(string(s))
	if err != nil {
		return "", time.Time{}, errors.New("no alert was fired here yet: fire one first")
	}
	id, at, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if fired, err = time.Parse(time.RFC3339Nano, at); err != nil {
		return "", time.Time{}, fmt.Errorf("%s does not read: fire again", s)
	}
	return id, fired, nil
}
