package protocol

import "testing"

func TestPeerRoutesRerouteOnlyListedPeers(t *testing.T) {
	routes, err := ParsePeerRoutes(" 127.0.0.1:9092=127.0.0.1:20001, 127.0.0.1:9093=127.0.0.1:20002,")
	if err != nil {
		t.Fatal(err)
	}
	SetPeerRoutes(routes)
	defer SetPeerRoutes(nil)
	for peer, want := range map[string]string{
		"127.0.0.1:9092": "127.0.0.1:20001",
		"127.0.0.1:9093": "127.0.0.1:20002",
		"127.0.0.1:9094": "127.0.0.1:9094",
	} {
		if got := PeerDialAddr(peer); got != want {
			t.Errorf("PeerDialAddr(%s) = %s, want %s", peer, got, want)
		}
	}
	for _, bad := range []string{"127.0.0.1:9092", "=127.0.0.1:1", "127.0.0.1:1="} {
		if _, err := ParsePeerRoutes(bad); err == nil {
			t.Errorf("ParsePeerRoutes(%q) accepted", bad)
		}
	}
}
