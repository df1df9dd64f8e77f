package app_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/app"
	"github.com/fusebox/fusebox/internal/config"
	"github.com/fusebox/fusebox/internal/testenv"
)

func load(t *testing.T, set map[string]string) *config.Config {
	t.Helper()
	vars := map[string]string{
		"FUSEBOX_STORAGE_CONNECTION_STRING": testenv.ConnectionString(t),
		"FUSEBOX_TABLE_PREFIX":              testenv.Prefix(t),
		"FUSEBOX_SESSION_KEY":               strings.Repeat("k", 32),
		"FUSEBOX_LOCAL_USERS":               "a:viewer:$2a$10$TQDQa6P/ZiMDvbHs9Sb4e.M8f2/Tc82NJL5ADyKFY7DRe3XI4gtM6",
		"FUSEBOX_BASE_URL":                  "https://fusebox.example.com",
		"FUSEBOX_METRICS_TOKEN":             "metrics-token-0123456789",
	}
	for k, v := range set {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestStartupRefusesBadStorageWithAClearError(t *testing.T) {
	good := testenv.ConnectionString(t)
	wrongKey := strings.Replace(good, "AccountKey=Eby8", "AccountKey=AAAA", 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().String()
	l.Close()
	unreachable := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://" + closedPort + "/devstoreaccount1;"

	for name, cs := range map[string]string{"wrong account key": wrongKey, "nothing listening": unreachable} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			_, err := app.New(ctx, load(t, map[string]string{"FUSEBOX_STORAGE_CONNECTION_STRING": cs}), app.Options{})
			if err == nil {
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), "FUSEBOX_STORAGE_CONNECTION_STRING") {
				t.Errorf("error does not name the variable: %v", err)
			}
			if strings.Contains(err.Error(), "AAAA") {
				t.Errorf("error quotes the account key: %v", err)
			}
		})
	}
}

func TestServeShutsDownGracefully(t *testing.T) {
	cfg := load(t, map[string]string{"FUSEBOX_SHUTDOWN_GRACE": "5s"})
	a, err := app.New(t.Context(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l) }()

	resp, err := http.Get("http://" + l.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := http.Get("http://" + l.Addr().String() + "/healthz"); err == nil {
		t.Error("still answering after shutdown")
	}
}
