package broker

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// A broker bound to all interfaces must be told what to advertise:
// clients elsewhere cannot dial 0.0.0.0, and 127.0.0.1 would reach
// themselves. Kafka refuses the same configurations.
func TestStartRefusesAddressesClientsCannotDial(t *testing.T) {
	for name, tc := range map[string]struct {
		listeners, advertised []string
		want                  string
	}{
		"wildcard bind, nothing advertised": {[]string{"PLAINTEXT://0.0.0.0:0"}, nil, "GOKAFKA_ADVERTISED_LISTENERS"},
		"empty host, nothing advertised":    {[]string{"PLAINTEXT://:0"}, nil, "GOKAFKA_ADVERTISED_LISTENERS"},
		"wildcard advertised":               {[]string{"PLAINTEXT://127.0.0.1:0"}, []string{"PLAINTEXT://0.0.0.0:9092"}, "nonroutable"},
		"second listener not advertised": {[]string{"PLAINTEXT://127.0.0.1:0", "EXTERNAL://0.0.0.0:0"},
			[]string{"PLAINTEXT://localhost:9092"}, "listener EXTERNAL"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := Config{NodeID: 1, Listeners: tc.listeners, AdvertisedListeners: tc.advertised, LogDirs: []string{t.TempDir()},
				SecurityProtocolMap: map[string]string{"PLAINTEXT": "PLAINTEXT", "EXTERNAL": "PLAINTEXT"}}
			srv, err := Start(context.Background(), cfg, zerolog.Nop())
			if err == nil {
				srv.Shutdown(context.Background())
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestAdvertisedListenerStandsForAWildcardBind(t *testing.T) {
	for _, tc := range []struct{ listeners, advertised []string }{
		{[]string{"PLAINTEXT://0.0.0.0:9092"}, []string{"PLAINTEXT://localhost:9092"}},
		{[]string{"PLAINTEXT://0.0.0.0:9092"}, []string{"EXTERNAL://kafka1:9092"}}, // one listener: any name stands for it
		{[]string{"PLAINTEXT://127.0.0.1:9092"}, nil},
	} {
		var lns []Listener
		for _, l := range tc.listeners {
			pl, err := ParseListener(l)
			if err != nil {
				t.Fatal(err)
			}
			lns = append(lns, pl)
		}
		if err := checkAdvertisable(&Config{AdvertisedListeners: tc.advertised, ControllerListenerNames: []string{"CONTROLLER"}}, lns); err != nil {
			t.Errorf("%v advertised as %v: %v", tc.listeners, tc.advertised, err)
		}
	}
}
