package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheckExitsZeroOnlyWhenReady(t *testing.T) {
	ready := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"ready":false,"reasons":["loading logs"]}`))
			return
		}
		w.Write([]byte(`{"ready":true}`))
	}))
	defer srv.Close()
	// The URL comes from http.listener when --url is not given.
	t.Setenv("GOKAFKA_HTTP_LISTENER", strings.TrimPrefix(srv.URL, "http://"))

	var out, errOut bytes.Buffer
	if code := healthcheck(nil, &out, &errOut); code != 1 {
		t.Fatalf("not ready: exit %d, want 1", code)
	}
	if !strings.Contains(errOut.String(), "loading logs") {
		t.Errorf("not ready: stderr %q does not say why", errOut.String())
	}
	ready = true
	if code := healthcheck(nil, &out, &errOut); code != 0 {
		t.Fatalf("ready: exit %d, want 0 (%s)", code, errOut.String())
	}
	if code := healthcheck([]string{"--url", srv.URL + "/nowhere"}, &out, &errOut); code != 1 {
		t.Fatalf("404: exit %d, want 1", code)
	}
	srv.Close()
	if code := healthcheck(nil, &out, &errOut); code != 1 {
		t.Fatalf("no listener: exit %d, want 1", code)
	}
}

func TestHealthcheckFailsWhenTheHTTPListenerIsOff(t *testing.T) {
	t.Setenv("GOKAFKA_HTTP_LISTENER", "")
	var out, errOut bytes.Buffer
	if code := healthcheck(nil, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "off") {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}

func TestHealthcheckAsksWildcardListenersOnLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	t.Setenv("GOKAFKA_HTTP_LISTENER", "0.0.0.0:"+port)
	var out, errOut bytes.Buffer
	if code := healthcheck(nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}
