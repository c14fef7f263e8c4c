package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Peer identity on broker-to-broker requests.
//
// Kafka trusts a broker-to-broker call because it arrives on the
// inter-broker or controller listener and, with security on, because the
// caller authenticates as a principal holding CLUSTER_ACTION. gokafka has
// no authentication yet; instead every request one gokafka node sends
// another names the sender in its request header's client id:
//
//	gokafka-<role>;cluster=<cluster id>;broker=<node id>;incarnation=<hex>
//
// The incarnation is the 128-bit random id the sender registered for its
// current run (BrokerRegistration's IncarnationId). It is never shown to
// clients (not in Metadata, DescribeCluster or any other response), so a
// program that can reach the inter-broker listener cannot present it
// without having seen the metadata itself. The receiver checks the three
// against its metadata image (CheckPeer): another cluster's node is
// refused (INCONSISTENT_CLUSTER_ID), an unknown node id too
// (BROKER_ID_NOT_REGISTERED), and a node whose run is over, a stale or
// restarted process, does not match the registered incarnation
// (STALE_BROKER_EPOCH). The receiver then closes the connection, as for a
// request its listener does not take.
//
// BrokerRegistration is the one call made before the incarnation is
// registered; it must name the same incarnation in its body, and the
// controller refuses a new incarnation for a broker whose registration is
// alive (DUPLICATE_BROKER_REGISTRATION), as Kafka does.

// Roles of the nodes' inter-broker clients.
const (
	PeerRoleController = "controller-forward"
	PeerRoleMarkers    = "txn-markers"
	PeerRoleFetcher    = "replica-fetcher"
)

// Peer is the sender a peer client id names.
type Peer struct {
	Role        string
	ClusterID   string
	NodeID      int32
	Incarnation string
}

const peerPrefix = "gokafka-"

// PeerClientID is the client id for requests sent by role on behalf of
// node id of cluster, in its run incarnation.
func PeerClientID(role, cluster string, node int32, incarnation string) string {
	return fmt.Sprintf("%s%s;cluster=%s;broker=%d;incarnation=%s", peerPrefix, role, cluster, node, incarnation)
}

// ParsePeerClientID parses a PeerClientID; ok is false for any other
// client id.
func ParsePeerClientID(s string) (p Peer, ok bool) {
	if !strings.HasPrefix(s, peerPrefix) {
		return Peer{}, false
	}
	parts := strings.Split(strings.TrimPrefix(s, peerPrefix), ";")
	if len(parts) != 4 {
		return Peer{}, false
	}
	p.Role = parts[0]
	var haveCluster, haveBroker, haveInc bool
	for _, kv := range parts[1:] {
		k, v, found := strings.Cut(kv, "=")
		if !found {
			return Peer{}, false
		}
		switch k {
		case "cluster":
			p.ClusterID, haveCluster = v, true
		case "broker":
			id, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return Peer{}, false
			}
			p.NodeID, haveBroker = int32(id), true
		case "incarnation":
			p.Incarnation, haveInc = v, true
		default:
			return Peer{}, false
		}
	}
	return p, haveCluster && haveBroker && haveInc && p.Role != ""
}

// ErrNotPeer is returned for a broker-to-broker request whose client id
// names no gokafka node.
var ErrNotPeer = errors.New("request does not come from a gokafka node of this cluster")

// CheckPeer checks the sender a client id names against im: same cluster,
// a registered node, its current run.
func CheckPeer(im *Image, clientID string) (Peer, error) {
	p, ok := ParsePeerClientID(clientID)
	if !ok {
		return Peer{}, ErrNotPeer
	}
	if im.ClusterID == "" || p.ClusterID != im.ClusterID {
		return p, fmt.Errorf("%w: cluster id %q, this cluster is %q", kerr.InconsistentClusterID, p.ClusterID, im.ClusterID)
	}
	b, ok := im.Brokers[p.NodeID]
	if !ok {
		return p, fmt.Errorf("%w: broker %d", kerr.BrokerIDNotRegistered, p.NodeID)
	}
	if b.Incarnation == "" || b.Incarnation != p.Incarnation {
		return p, fmt.Errorf("%w: broker %d is not in its registered run", kerr.StaleBrokerEpoch, p.NodeID)
	}
	return p, nil
}

// PeerClientID is the client id this node puts on requests role sends to
// other nodes.
func (c *Controller) PeerClientID(role string) string {
	return PeerClientID(role, c.Image().ClusterID, c.cfg.NodeID, c.Incarnation())
}

// Incarnation is this process's registration incarnation id.
func (c *Controller) Incarnation() string {
	c.incMu.Lock()
	defer c.incMu.Unlock()
	if c.incarnation == "" {
		c.incarnation = newIncarnation()
	}
	return c.incarnation
}
