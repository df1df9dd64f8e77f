package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
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
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/hooks/azure-monitor/"+AlertsSecret, bytes.NewReader(payload))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("demo: post the alert: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body), nil
}
