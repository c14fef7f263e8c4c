package protocol

import (
	"fmt"
	"strings"
)

// PeerRoutesEnv names the test-only environment variable that reroutes this
// node's connections to its peers. Its value is a comma-separated list of
// "peer=via" pairs of host:port addresses: every broker-to-broker
// connection this process opens to peer (a replica fetch, a request
// forwarded to the active controller, a transaction marker, a metadata
// quorum RPC) dials via instead. Clients are not affected: they dial the
// advertised listeners as ever.
//
// It exists so that integration tests can put a fault proxy of their own
// on every ordered pair of nodes (node A reaches node B through one proxy,
// B reaches A through another) and cut, delay or drop each direction
// without root. Kafka's inter-broker listener cannot do that: an
// advertised address is the same for every dialer. It is not a Kafka
// property and not listed in config.yaml; production never sets it.
const PeerRoutesEnv = "GOKAFKA_TEST_PEER_ROUTES"

// PeerRoutes maps a peer's address (host:port) to the address a node dials
// to reach it. They belong to one node: nodes embedded in one process
// (gokafkatest) each have their own, which is why they travel in the
// configs of the components that dial peers rather than in a process-wide
// variable. A nil PeerRoutes dials every peer directly. It is never
// modified once a node started with it.
type PeerRoutes map[string]string

// ParsePeerRoutes parses PeerRoutesEnv's "peer=via,peer=via" form.
func ParsePeerRoutes(s string) (PeerRoutes, error) {
	out := PeerRoutes{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		peer, via, ok := strings.Cut(item, "=")
		if !ok || peer == "" || via == "" {
			return nil, fmt.Errorf("%s entry %q: want peer-host:port=via-host:port", PeerRoutesEnv, item)
		}
		out[peer] = via
	}
	return out, nil
}

// DialAddr returns the address to dial to reach peer: peer itself unless a
// route says otherwise.
func (r PeerRoutes) DialAddr(peer string) string {
	if via, ok := r[peer]; ok {
		return via
	}
	return peer
}
