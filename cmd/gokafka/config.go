package main

import (
	"fmt"
	"math"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/broker"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/quota"
	"github.com/gokafka/gokafka/replication"
	"github.com/gokafka/gokafka/share"
	"github.com/gokafka/gokafka/tlsconf"
	"github.com/gokafka/gokafka/txn"
)

// property is one broker setting: Kafka's name, Kafka's default ("" for
// none), and what it does. config.yaml lists the same table; a test keeps
// them in step.
type property struct {
	name, def, doc string
}

// localValues are the properties config.yaml sets away from Kafka's
// default, for a broker run on a developer's machine.
var localValues = map[string]string{
	"group.initial.rebalance.delay.ms": "0",
}

// offWhenEmpty are the properties an empty GOKAFKA_<NAME> sets to empty
// (turning the feature off) rather than leaving at the default.
var offWhenEmpty = map[string]bool{"http.listener": true}

var maxLong = strconv.FormatInt(math.MaxInt64, 10)

// The ssl.* properties are tlsconf's table; listener.name.<name>.ssl.*
// overrides each for one listener.
func init() {
	for _, p := range tlsconf.Properties {
		properties = append(properties, property{p.Name, p.Default, p.Doc})
	}
}

var properties = []property{
	{"node.id", "1", "This node's id, as broker and as metadata quorum voter."},
	{"process.roles", "broker,controller", "Roles of this node: broker, controller or broker,controller; a broker-only node follows the metadata quorum without voting, a controller-only node hosts no partitions."},
	{"listeners", "PLAINTEXT://127.0.0.1:9092", "Comma-separated listener URLs the broker binds; add CONTROLLER://host:port when controller.quorum.voters is set."},
	{"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", "Listener name to security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) as NAME:PROTOCOL pairs; a controller listener missing from it is PLAINTEXT, as in Kafka's KRaft mode."},
	{"controller.listener.names", "CONTROLLER", "Listener names that carry the metadata quorum's traffic."},
	{"inter.broker.listener.name", "", "Listener the brokers reach each other on, the only one serving broker-to-broker requests; empty means the first listener that is not a controller listener."},
	{"sasl.enabled.mechanisms", "GSSAPI", "SASL mechanisms SASL_* listeners offer: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (Kafka's default GSSAPI is not supported, so a SASL listener needs this set; per listener: listener.name.<name>.sasl.enabled.mechanisms)."},
	{"sasl.mechanism.inter.broker.protocol", "GSSAPI", "Mechanism brokers authenticate to each other with when the inter-broker listener is SASL_*; its credentials are the username/password options of listener.name.<name>.<mechanism>.sasl.jaas.config."},
	{"connections.max.reauth.ms", "0", "Longest SASL session before the client must re-authenticate (KIP-368), told in SaslAuthenticate; a connection past it is closed; 0 for no limit (per listener and mechanism: listener.name.<name>.<mechanism>.connections.max.reauth.ms)."},
	{"connection.failed.authentication.delay.ms", "100", "How long the answer to a failed SASL authentication, and the close after it, are held back, to slow down password guessing."},
	{"sasl.server.max.receive.size", "524288", "Largest request frame a connection may send before it has authenticated on a SASL listener; larger closes the connection."},
	{"sasl.oauthbearer.jwks.endpoint.url", "", "JWKS (file://, http:// or https://) OAUTHBEARER tokens must be signed by (RS256, ES256); empty accepts Kafka's unsecured tokens, for development."},
	{"sasl.oauthbearer.expected.audience", "", "Comma-separated audiences a signed OAUTHBEARER token's aud must include; empty checks none."},
	{"sasl.oauthbearer.expected.issuer", "", "Issuer a signed OAUTHBEARER token's iss must be; empty checks none."},
	{"sasl.oauthbearer.sub.claim.name", "sub", "Claim of a signed OAUTHBEARER token naming the principal."},
	{"sasl.oauthbearer.scope.claim.name", "scope", "Claim of a signed OAUTHBEARER token holding its scopes."},
	{"sasl.oauthbearer.clock.skew.seconds", "30", "Clock skew allowed when checking a signed OAUTHBEARER token's exp, iat and nbf."},
	{"gokafka.replica.fetch.session.watch.enable", "true", "A follower's fetch session reads only the partitions that changed since its last fetch instead of all of them as Kafka does (less idle CPU with many partitions)."},
	{"gokafka.replica.write.uncached.enable", "true", "A follower writes the records it replicates uncached (RWF_DONTCACHE, Linux 6.14+ on ext4, xfs, btrfs): the page cache drops them once on disk instead of keeping data nobody reads there. Off while replica.selector.class lets consumers read from followers."},
	{"gokafka.scram.bootstrap.users", "", "SCRAM credentials a new cluster is created with, as kafka-storage format --add-scram writes them: SCRAM-SHA-256=[name=admin,password=admin-secret], several separated by spaces or ';'."},
	{"controller.quorum.voters", "", "Metadata quorum voters as id@host:port of their CONTROLLER listeners; empty for a single-node cluster."},
	{"controller.quorum.bootstrap.servers", "", "host:port list of controllers a node joins through when controller.quorum.voters is empty: it follows the quorum as an observer (a new controller until AddRaftVoter)."},
	{"controller.quorum.election.timeout.ms", "500", "How long a metadata quorum candidate waits for votes before asking again (at least controller.quorum.fetch.timeout.ms)."},
	{"controller.quorum.fetch.timeout.ms", "2000", "A metadata quorum voter that hears nothing from the leader for this long starts an election, and a leader that hears from no majority for this long steps down; the leader heartbeats every tenth to fifth of it."},
	{"metadata.log.max.record.bytes.between.snapshots", "20971520", "A node snapshots the metadata log once the entries it applied since its last snapshot exceed this many bytes (it also snapshots every 1,024 entries and at a clean shutdown), bounding what a restart replays."},
	{"metadata.log.max.snapshot.interval.ms", "3600000", "Longest a node goes without a metadata snapshot while it has applied entries the last one lacks; 0 snapshots by size and count only."},
	{"metadata.max.retention.bytes", "104857600", "After a metadata snapshot, the log before it is deleted but for the newest entries holding at most this many bytes (never fewer than 16 entries); -1 for no limit."},
	{"metadata.max.retention.ms", "604800000", "After a metadata snapshot, the log before it is deleted but for entries younger than this (never fewer than 16 entries); -1 for no limit."},
	{"broker.heartbeat.interval.ms", "2000", "How often a broker heartbeats to the active controller."},
	{"broker.session.timeout.ms", "9000", "A broker not heard from for this long is fenced and its leaderships move."},
	{"replica.lag.time.max.ms", "30000", "A follower not caught up to the leader's log end for this long leaves the ISR."},
	{"replica.fetch.wait.max.ms", "500", "Longest a follower's fetch waits at the leader for new data."},
	{"replica.fetch.min.bytes", "1", "Bytes a follower's fetch waits for."},
	{"replica.fetch.max.bytes", "1048576", "Bytes a follower fetches per partition (at least one batch)."},
	{"replica.fetch.response.max.bytes", "10485760", "Bytes a follower fetches per request."},
	{"replica.fetch.backoff.ms", "1000", "Pause after a failed follower fetch."},
	{"replica.socket.timeout.ms", "30000", "Timeout of a follower's requests to the leader."},
	{"replica.selector.class", "", "Empty: leaders serve consumers themselves; org.apache.kafka.common.replica.RackAwareReplicaSelector: a leader sends a consumer with client.rack to an in-sync replica in its rack (KIP-392)."},
	{"producer.id.expiration.ms", "86400000", "A producer idle on a partition for this long is forgotten there (its next batch starts afresh)."},
	{"advertised.listeners", "", "Addresses given to clients; empty means the listeners."},
	{"broker.rack", "", "Rack of this broker; empty for none."},
	{"log.dirs", "./data", "Comma-separated directories holding the partition logs."},
	{"num.partitions", "1", "Partitions of an auto-created topic or of CreateTopics with -1."},
	{"default.replication.factor", "1", "Replication factor of auto-created topics or CreateTopics with -1."},
	{"auto.create.topics.enable", "true", "Create unknown topics named in Metadata requests."},
	{"delete.topic.enable", "true", "Allow DeleteTopics."},
	{"follower.replication.throttled.rate", "9223372036854775807", "Bytes per second this broker's followers copy for the replicas follower.replication.throttled.replicas names (dynamic per broker or cluster-wide)."},
	{"leader.replication.throttled.rate", "9223372036854775807", "Bytes per second this broker sends catching-up followers for the replicas leader.replication.throttled.replicas names (dynamic per broker or cluster-wide)."},
	{"auto.leader.rebalance.enable", "true", "The active controller moves leaderships back to preferred replicas when a broker's imbalance is past leader.imbalance.per.broker.percentage."},
	{"leader.imbalance.check.interval.seconds", "300", "How often the active controller checks the leader imbalance."},
	{"leader.imbalance.per.broker.percentage", "10", "Percentage of a broker's preferred partitions led elsewhere above which leadership moves back."},
	{"authorizer.class.name", "", "Turns ACLs on: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer); empty authorizes nothing."},
	{"super.users", "", "Semicolon-separated principals allowed everything (User:admin;User:broker); with ACLs on, the brokers' own principal must be one."},
	{"allow.everyone.if.no.acl.found", "false", "With ACLs on, allow an operation on a resource no ACL matches."},
	{"message.max.bytes", "1048588", "Largest record batch accepted (topic: max.message.bytes)."},
	{"socket.request.max.bytes", "104857600", "Largest request frame; a larger size closes the connection."},
	{"connections.max.idle.ms", "600000", "Close connections idle for this long, and connections a response could not be written to for this long."},
	{"max.connections", "2147483647", "Connections the broker holds at once; at the limit listeners stop accepting until one closes (per listener: listener.name.<name>.max.connections)."},
	{"max.connections.per.ip", "2147483647", "Connections one address may hold; more are accepted and closed at once."},
	{"max.connections.per.ip.overrides", "", "Per-address limits as host:count,ip:count, overriding max.connections.per.ip."},
	{"queued.max.requests", "500", "Requests read and being served across the broker; further connections wait (a parked fetch or acks=all produce does not count)."},
	{"queued.max.request.bytes", "-1", "Bytes of request frames held across the broker; -1 for no limit."},
	{"fetch.max.bytes", "57671680", "Most bytes one Fetch response carries, whatever the request asks (at least one batch)."},
	{"max.incremental.fetch.session.cache.slots", "1000", "Fetch sessions (KIP-227) kept for incremental fetches; 0 keeps none."},
	{"log.segment.bytes", "1073741824", "Roll a segment at this size (topic: segment.bytes)."},
	{"log.roll.ms", "", "Roll a segment this long after its first record (topic: segment.ms); empty uses log.roll.hours."},
	{"log.roll.hours", "168", "Segment roll time in hours when log.roll.ms is not set."},
	{"log.retention.ms", "", "Delete segments older than this (topic: retention.ms); -1 keeps forever; empty uses minutes/hours."},
	{"log.retention.minutes", "", "Retention in minutes when log.retention.ms is not set."},
	{"log.retention.hours", "168", "Retention in hours when neither log.retention.ms nor minutes is set."},
	{"log.retention.bytes", "-1", "Delete old segments beyond this partition size (topic: retention.bytes); -1 for no limit."},
	{"log.retention.check.interval.ms", "300000", "How often retention runs."},
	{"log.index.interval.bytes", "4096", "Bytes between offset index entries (topic: index.interval.bytes)."},
	{"log.index.size.max.bytes", "10485760", "Largest offset index; a full index rolls the segment (topic: segment.index.bytes)."},
	{"log.flush.interval.messages", maxLong, "fsync after this many records (topic: flush.messages); 1 syncs before every ack."},
	{"log.flush.interval.ms", "", "fsync a partition this long after its oldest unflushed write (topic: flush.ms); empty never by time."},
	{"log.flush.scheduler.interval.ms", "1000", "How often log.flush.interval.ms is checked."},
	{"log.flush.offset.checkpoint.interval.ms", "60000", "How often recovery points are checkpointed."},
	{"log.message.timestamp.type", "CreateTime", "CreateTime or LogAppendTime (topic: message.timestamp.type)."},
	{"log.cleanup.policy", "delete", "delete or compact (topic: cleanup.policy)."},
	{"log.cleaner.enable", "true", "Run the log cleaner, which compacts topics whose cleanup.policy includes compact."},
	{"log.cleaner.threads", "1", "Cleaner threads; each cleans one log at a time."},
	{"log.cleaner.dedupe.buffer.size", "134217728", "Memory for the cleaners' key maps (24 bytes a key), shared by the threads; a log with more dirty keys is cleaned in several passes."},
	{"log.cleaner.io.buffer.load.factor", "0.9", "How full a cleaner's key map gets before it cleans what it has."},
	{"log.cleaner.io.buffer.size", "524288", "Reported for compatibility; the cleaner reads through 256 KiB buffers."},
	{"log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", "Bytes per second all cleaner threads together may read."},
	{"log.cleaner.backoff.ms", "15000", "How long a cleaner thread sleeps when no log needs cleaning."},
	{"log.cleaner.min.cleanable.ratio", "0.5", "Dirty share of a log at which it is cleaned (topic: min.cleanable.dirty.ratio)."},
	{"log.cleaner.min.compaction.lag.ms", "0", "Records younger than this are not compacted (topic: min.compaction.lag.ms)."},
	{"log.cleaner.max.compaction.lag.ms", "9223372036854775807", "Records older than this are compacted whatever the dirty ratio (topic: max.compaction.lag.ms)."},
	{"log.cleaner.delete.retention.ms", "86400000", "How long tombstones and transaction markers stay after cleaning reaches them (topic: delete.retention.ms)."},
	{"log.preallocate", "false", "Reported for compatibility (topic: preallocate)."},
	{"log.segment.delete.delay.ms", "60000", "Reported for compatibility (topic: file.delete.delay.ms)."},
	{"min.insync.replicas", "1", "Replicas that must acknowledge an acks=all write (topic: min.insync.replicas)."},
	{"unclean.leader.election.enable", "false", "Allow a leader from outside the ISR (topic: unclean.leader.election.enable)."},
	{"compression.type", "producer", "Topic default for compression.type; batches are stored as the producer sent them."},
	{"offsets.topic.num.partitions", "50", "Partitions of __consumer_offsets when it is created."},
	{"offsets.topic.replication.factor", "3", "Replicas of __consumer_offsets; created with fewer if fewer brokers are live."},
	{"offsets.topic.segment.bytes", "104857600", "Segment size of __consumer_offsets."},
	{"offsets.load.buffer.size", "5242880", "Bytes read per step when loading groups from __consumer_offsets."},
	{"offsets.retention.minutes", "10080", "Committed offsets of an empty group expire this long after it became empty."},
	{"offsets.retention.check.interval.ms", "600000", "How often expired offsets are removed."},
	{"offsets.commit.timeout.ms", "5000", "How long a write to __consumer_offsets may wait for the ISR."},
	{"offset.metadata.max.bytes", "4096", "Largest metadata string of a committed offset."},
	{"group.min.session.timeout.ms", "6000", "Smallest session timeout a group member may ask for."},
	{"group.max.session.timeout.ms", "1800000", "Largest session timeout a group member may ask for."},
	{"group.initial.rebalance.delay.ms", "3000", "How long the first rebalance of an empty group waits for more members (Kafka's default 3000; config.yaml sets 0 so local consumers start at once)."},
	{"group.max.size", "2147483647", "Most members a group may have."},
	{"group.consumer.session.timeout.ms", "45000", "A member of a consumer-protocol group (KIP-848) that does not heartbeat for this long is removed."},
	{"group.consumer.heartbeat.interval.ms", "5000", "How often members of a consumer-protocol group are told to heartbeat."},
	{"group.consumer.max.size", "2147483647", "Most members a consumer-protocol group may have."},
	{"group.consumer.migration.policy", "bidirectional", "Which online conversions between classic and consumer-protocol groups are allowed: bidirectional, upgrade, downgrade or disabled (KIP-848)."},
	{"group.share.session.timeout.ms", "45000", "A share-group member that sends no heartbeat for this long leaves its group."},
	{"group.share.heartbeat.interval.ms", "5000", "How often share-group members are told to heartbeat."},
	{"group.share.record.lock.duration.ms", "30000", "How long a share consumer holds acquired records before they become available again."},
	{"group.share.delivery.count.limit", "5", "A record delivered this many times to share consumers is archived instead of redelivered."},
	{"group.share.partition.max.record.locks", "2000", "Most in-flight records a share partition holds."},
	{"group.share.max.size", "200", "Most members a share group may have."},
	{"group.share.checkpoint.interval.ms", "5000", "How often a partition leader writes its share groups' start offsets to the metadata quorum (gokafka's own; a new leader resumes there)."},
	{"transaction.state.log.num.partitions", "50", "Partitions of __transaction_state when it is created."},
	{"transaction.state.log.replication.factor", "3", "Replicas of __transaction_state; created with fewer if fewer brokers are live."},
	{"transaction.state.log.min.isr", "2", "min.insync.replicas of __transaction_state, capped at its replication factor."},
	{"transaction.state.log.segment.bytes", "104857600", "Segment size of __transaction_state."},
	{"transaction.state.log.load.buffer.size", "5242880", "Bytes read per step when loading transactions from __transaction_state."},
	{"transaction.max.timeout.ms", "900000", "Largest transaction.timeout.ms a producer may ask for."},
	{"transaction.abort.timed.out.transaction.cleanup.interval.ms", "10000", "How often transactions open past their timeout are aborted."},
	{"quota.window.num", "11", "Samples a client quota rate is measured over."},
	{"quota.window.size.seconds", "1", "Span of one client quota sample, in seconds."},
	{"shutdown.timeout.ms", "30000", "How long in-flight requests may take to finish at shutdown."},
	{"log.level", "info", "trace, debug, info, warn or error."},
	{"log.format", "console", "console or json."},
	{"http.listener", defaultHTTPListener, "host:port of the HTTP listener serving /metrics (Prometheus), /livez and /readyz; empty turns it off."},
	{"metrics.partition.series.max", "1000", "Per-partition metric series (log size, offsets, ISR) are exported while this broker hosts at most this many partitions; 0 turns them off."},
	{"debug.pprof.listener", "", "host:port serving Go's net/http/pprof profiles (off when empty); for profiling only, never on a public interface."},
	{"memory.idle.release.interval.ms", "10000", "How often the idle heap is checked; when much is free and little was allocated since, a collection returns it to the OS (as the JVM's periodic G1 collection does); 0 turns it off."},
}

// loadConfig reads config.yaml (if path is set), then GOKAFKA_* env
// overrides, and returns the typed configs.
func loadConfig(path string) (*settings, error) {
	// Kafka's names contain dots; a different key delimiter keeps viper
	// from reading them as nested maps.
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	v.SetEnvPrefix("GOKAFKA")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	for _, p := range properties {
		v.SetDefault(p.name, p.def)
		if err := v.BindEnv(p.name); err != nil {
			return nil, err
		}
	}
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("read config %s: %w", path, err)
		}
		known := map[string]bool{}
		for _, p := range properties {
			known[p.name] = true
		}
		for _, k := range v.AllKeys() {
			if !known[k] && !listenerProperty.MatchString(k) {
				return nil, fmt.Errorf("config %s: unknown property %q", path, k)
			}
		}
	}
	s := &settings{values: map[string]string{}, set: map[string]bool{}}
	// listener.name.<name>.<property>, from the file and from
	// GOKAFKA_LISTENER_NAME_<NAME>_<PROPERTY>.
	for _, k := range v.AllKeys() {
		if listenerProperty.MatchString(k) {
			s.values[k] = strings.TrimSpace(v.GetString(k))
		}
	}
	names := listenerNames(v.GetString("listeners"))
	for _, kv := range os.Environ() {
		k, val, _ := strings.Cut(kv, "=")
		if rest, ok := strings.CutPrefix(k, "GOKAFKA_LISTENER_NAME_"); ok {
			if key := listenerEnvKey(names, rest); key != "" {
				s.values[key] = strings.TrimSpace(val)
			}
		}
	}
	for _, p := range properties {
		val := strings.TrimSpace(v.GetString(p.name))
		s.values[p.name] = val
		env, inEnv := os.LookupEnv("GOKAFKA_" + strings.ToUpper(strings.ReplaceAll(p.name, ".", "_")))
		if inEnv && strings.TrimSpace(env) == "" && offWhenEmpty[p.name] {
			val = ""
			s.values[p.name] = val
		}
		s.set[p.name] = inEnv || v.InConfig(p.name) && val != p.def
	}
	return s, nil
}

type settings struct {
	values map[string]string
	set    map[string]bool
	errs   []string
}

func (s *settings) str(name string) string { return s.values[name] }

// listenerProperty matches a per-listener property as Kafka names them,
// listener.name.<listener name in lower case>.<property>: the listener's
// own value of <property> (max.connections, ssl.*, sasl.*, <mechanism>.sasl.jaas.config).
var listenerProperty = regexp.MustCompile(`^listener\.name\.[a-z0-9_-]+\.[a-z0-9._-]+$`)

// listenerNames returns the upper-case names of a listeners value.
func listenerNames(listeners string) []string {
	var out []string
	for _, l := range strings.Split(listeners, ",") {
		if name, _, ok := strings.Cut(strings.TrimSpace(l), "://"); ok && name != "" {
			out = append(out, strings.ToUpper(name))
		}
	}
	return out
}

// listenerEnvKey maps the rest of GOKAFKA_LISTENER_NAME_<NAME>_<PROPERTY>
// to listener.name.<name>.<property>. Listener names may hold underscores
// (SASL_SSL), so the name is the longest configured listener name that
// prefixes it; the property's underscores are dots. "" when none matches.
func listenerEnvKey(names []string, rest string) string {
	best := ""
	for _, n := range names {
		if strings.HasPrefix(rest, n+"_") && len(n) > len(best) {
			best = n
		}
	}
	if best == "" {
		// A listener not (yet) in listeners: only the unambiguous
		// max.connections is recognised.
		if name, ok := strings.CutSuffix(rest, "_MAX_CONNECTIONS"); ok && name != "" {
			return "listener.name." + strings.ToLower(name) + ".max.connections"
		}
		return ""
	}
	if len(rest) == len(best)+1 {
		return ""
	}
	prop := strings.ToLower(strings.ReplaceAll(rest[len(best)+1:], "_", "."))
	return "listener.name." + strings.ToLower(best) + "." + prop
}

// listenerSettings returns every listener.name.<name>.<property> by
// upper-case listener name, then property.
func (s *settings) listenerSettings() map[string]map[string]string {
	out := map[string]map[string]string{}
	for k, v := range s.values {
		if !listenerProperty.MatchString(k) {
			continue
		}
		rest := strings.TrimPrefix(k, "listener.name.")
		name, prop, _ := strings.Cut(rest, ".")
		name = strings.ToUpper(name)
		if out[name] == nil {
			out[name] = map[string]string{}
		}
		out[name][prop] = v
	}
	return out
}

// sslSettings returns the broker-wide ssl.* properties.
func (s *settings) sslSettings() map[string]string {
	out := map[string]string{}
	for _, p := range tlsconf.Properties {
		out[p.Name] = s.values[p.Name]
	}
	return out
}

// listenerLimits returns listener.name.<name>.max.connections by upper-case
// listener name.
func (s *settings) listenerLimits() map[string]int {
	out := map[string]int{}
	for name, props := range s.listenerSettings() {
		if _, ok := props["max.connections"]; ok {
			out[name] = int(min(s.positive("listener.name."+strings.ToLower(name)+".max.connections"), math.MaxInt32))
		}
	}
	return out
}

// securityProtocols parses listener.security.protocol.map.
func (s *settings) securityProtocols() map[string]string {
	out := map[string]string{}
	for _, pair := range s.list("listener.security.protocol.map") {
		name, proto, ok := strings.Cut(pair, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		switch {
		case !ok || name == "":
			s.errs = append(s.errs, fmt.Sprintf("listener.security.protocol.map: %q is not NAME:PROTOCOL", pair))
		case !slices.Contains(broker.SecurityProtocols, proto):
			s.errs = append(s.errs, fmt.Sprintf("listener.security.protocol.map: unknown security protocol %q for listener %s", proto, name))
		default:
			out[name] = proto
		}
	}
	return out
}

// ipOverrides parses max.connections.per.ip.overrides, "host:count,...".
// Host names are resolved once, at start-up, as Kafka does.
func (s *settings) ipOverrides() map[string]int {
	out := map[string]int{}
	for _, item := range s.list("max.connections.per.ip.overrides") {
		i := strings.LastIndex(item, ":")
		n, err := strconv.Atoi(strings.TrimSpace(item[i+1:]))
		if i <= 0 || err != nil || n < 0 {
			s.errs = append(s.errs, fmt.Sprintf("max.connections.per.ip.overrides: %q is not host:count", item))
			continue
		}
		host := strings.Trim(strings.TrimSpace(item[:i]), "[]")
		if ip := net.ParseIP(host); ip != nil {
			out[ip.String()] = n
			continue
		}
		ips, err := net.LookupIP(host)
		if err != nil {
			s.errs = append(s.errs, fmt.Sprintf("max.connections.per.ip.overrides: %s: %v", host, err))
			continue
		}
		for _, ip := range ips {
			out[ip.String()] = n
		}
	}
	return out
}

func (s *settings) i64(name string) int64 {
	n, err := strconv.ParseInt(s.values[name], 10, 64)
	if err != nil {
		s.errs = append(s.errs, fmt.Sprintf("%s: %q is not an integer", name, s.values[name]))
	}
	return n
}

// optI64 parses a property that may be empty.
func (s *settings) optI64(name string) (int64, bool) {
	if s.values[name] == "" {
		return 0, false
	}
	return s.i64(name), true
}

func (s *settings) boolean(name string) bool {
	b, err := strconv.ParseBool(s.values[name])
	if err != nil {
		s.errs = append(s.errs, fmt.Sprintf("%s: %q is not a boolean", name, s.values[name]))
	}
	return b
}

func (s *settings) list(name string) []string {
	var out []string
	for _, item := range strings.Split(s.values[name], ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (s *settings) positive(name string) int64 {
	n := s.i64(name)
	if n <= 0 {
		s.errs = append(s.errs, fmt.Sprintf("%s must be positive, got %d", name, n))
	}
	return n
}

// percentage is a setting between 0 and 100.
func (s *settings) percentage(name string) int64 {
	n := s.i64(name)
	if n < 0 || n > 100 {
		s.errs = append(s.errs, fmt.Sprintf("%s must be between 0 and 100, got %d", name, n))
	}
	return n
}

// nonNegative is a setting of 0 or more.
func (s *settings) nonNegative(name string) int64 {
	n := s.i64(name)
	if n < 0 {
		s.errs = append(s.errs, fmt.Sprintf("%s must not be negative, got %d", name, n))
	}
	return n
}

// fetchSessionSlots maps max.incremental.fetch.session.cache.slots to
// broker.Config's, where 0 is Kafka's default and a negative count none.
func fetchSessionSlots(n int64) int {
	if n <= 0 {
		return -1
	}
	return int(min(n, math.MaxInt32))
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// brokerConfig turns settings into the broker's typed config, collecting
// every invalid setting in s.errs (in the order the settings are read)
// before failing.
func (s *settings) brokerConfig() (broker.Config, error) {
	defaults := s.brokerDefaults()

	var rack *string
	if r := s.str("broker.rack"); r != "" {
		rack = &r
	}
	voters, err := cluster.ParseVoters(s.str("controller.quorum.voters"))
	if err != nil {
		s.errs = append(s.errs, err.Error())
	}
	if boot := s.list("controller.quorum.bootstrap.servers"); len(voters) == 0 && len(boot) > 0 {
		// A node that knows only where to reach the controllers joins
		// through them as an observer (cluster.Voter with no id).
		for _, addr := range boot {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				s.errs = append(s.errs, fmt.Sprintf("controller.quorum.bootstrap.servers: %q: %v", addr, err))
				continue
			}
			voters = append(voters, cluster.Voter{ID: -1, Addr: addr})
		}
	}
	nodeID := s.i64("node.id")
	if nodeID < 0 || nodeID > math.MaxInt32 {
		s.errs = append(s.errs, fmt.Sprintf("node.id %d out of range", nodeID))
	}
	cfg := broker.Config{
		NodeID:                   int32(nodeID),
		Listeners:                s.list("listeners"),
		AdvertisedListeners:      s.list("advertised.listeners"),
		Rack:                     rack,
		LogDirs:                  s.list("log.dirs"),
		NumPartitions:            int32(s.positive("num.partitions")),
		DefaultReplicationFactor: int16(s.positive("default.replication.factor")),
		AutoCreateTopics:         s.boolean("auto.create.topics.enable"),
		DeleteTopicEnable:        s.boolean("delete.topic.enable"),
		FetchMaxBytes:            int32(min(s.positive("fetch.max.bytes"), math.MaxInt32)),
		FetchSessionCacheSlots:   fetchSessionSlots(s.nonNegative("max.incremental.fetch.session.cache.slots")),
		FollowerSessionWatch:     s.boolean("gokafka.replica.fetch.session.watch.enable"),
		Protocol:                 s.protocolConfig(),
		Logs:                     s.logsConfig(),
		Txn:                      s.txnConfig(),
		Replication:              s.replicationConfig(),
		BrokerDefaults:           defaults,
		ShutdownTimeout:          ms(s.positive("shutdown.timeout.ms")),
		Quota:                    s.quotaConfig(),
		Quorum:                   s.quorumConfig(voters),
		ControllerListenerNames:  upper(s.list("controller.listener.names")),
		InterBrokerListenerName:  strings.ToUpper(s.str("inter.broker.listener.name")),
		SecurityProtocolMap:      s.securityProtocols(),
		ListenerSettings:         s.listenerSettings(),
		SSL:                      s.sslSettings(),
		Groups:                   s.groupConfig(),
		Share:                    s.shareConfig(),
		Authorizer:               s.authorizerConfig(),
	}
	cfg.SASL = s.saslConfig()
	cfg.LeaderRebalance = broker.LeaderRebalanceConfig{
		Enable:              s.boolean("auto.leader.rebalance.enable"),
		CheckInterval:       time.Duration(min(s.positive("leader.imbalance.check.interval.seconds"), math.MaxInt32)) * time.Second,
		PerBrokerPercentage: int(s.percentage("leader.imbalance.per.broker.percentage")),
	}
	s.validate(&cfg)
	if len(s.errs) > 0 {
		return broker.Config{}, fmt.Errorf("invalid configuration: %s", strings.Join(s.errs, "; "))
	}
	// The broker-level values reach each log through the topic config
	// resolution (cluster.TopicConfigValue); the defaults below are what
	// partition.Manager uses for logs of topics it cannot resolve.
	cfg.Logs.Defaults = partition.DefaultConfig()
	rc := cfg.Replication
	rc.NodeID = cfg.NodeID
	if err := rc.Validate(); err != nil {
		return broker.Config{}, fmt.Errorf("invalid configuration: %w", err)
	}
	return cfg, nil
}

// brokerDefaults is the effective values of the properties that topic
// configs inherit from, and which of them were set. Derived values follow
// Kafka: log.retention.ms over minutes over hours, log.roll.ms over hours.
func (s *settings) brokerDefaults() cluster.BrokerDefaults {
	retentionMs := s.i64("log.retention.hours") * 3600000
	if m, ok := s.optI64("log.retention.minutes"); ok {
		retentionMs = m * 60000
	}
	if m, ok := s.optI64("log.retention.ms"); ok {
		retentionMs = m
	}
	rollMs := s.i64("log.roll.hours") * 3600000
	if m, ok := s.optI64("log.roll.ms"); ok {
		rollMs = m
	}
	flushMs, ok := s.optI64("log.flush.interval.ms")
	if !ok {
		flushMs = math.MaxInt64
	}

	values := map[string]string{}
	for k, v := range s.values {
		if v != "" && k != "log.level" && k != "log.format" && k != "debug.pprof.listener" && k != "http.listener" && k != "metrics.partition.series.max" && k != "memory.idle.release.interval.ms" && !secretProperty(k) {
			values[k] = v
		}
	}
	values["log.retention.ms"] = strconv.FormatInt(retentionMs, 10)
	values["log.roll.ms"] = strconv.FormatInt(rollMs, 10)
	values["log.flush.interval.ms"] = strconv.FormatInt(flushMs, 10)
	set := map[string]bool{}
	for k, ok := range s.set {
		set[k] = ok
	}
	set["log.retention.ms"] = s.set["log.retention.ms"] || s.set["log.retention.minutes"] || s.set["log.retention.hours"]
	set["log.roll.ms"] = s.set["log.roll.ms"] || s.set["log.roll.hours"]
	return cluster.BrokerDefaults{Values: values, Set: set}
}

// protocolConfig is the connection runtime's limits.
func (s *settings) protocolConfig() protocol.Config {
	// The per-connection response bounds are gokafka's own (Kafka holds
	// one response per connection), kept at protocol's defaults.
	c := protocol.DefaultConfig()
	c.MaxRequestBytes = int32(min(s.positive("socket.request.max.bytes"), math.MaxInt32))
	c.IdleTimeout = ms(s.i64("connections.max.idle.ms"))
	c.MaxConnections = int(min(s.positive("max.connections"), math.MaxInt32))
	c.ListenerMaxConnections = s.listenerLimits()
	c.MaxConnectionsPerIP = int(min(s.positive("max.connections.per.ip"), math.MaxInt32))
	c.MaxConnectionsPerIPOverrides = s.ipOverrides()
	c.QueuedMaxRequests = int(min(s.positive("queued.max.requests"), math.MaxInt32))
	c.QueuedMaxRequestBytes = s.i64("queued.max.request.bytes")
	return c
}

// logsConfig is the log manager's background intervals.
func (s *settings) logsConfig() partition.ManagerConfig {
	return partition.ManagerConfig{
		RetentionCheckInterval: ms(s.positive("log.retention.check.interval.ms")),
		CheckpointInterval:     ms(s.positive("log.flush.offset.checkpoint.interval.ms")),
		FlushSchedulerInterval: ms(s.positive("log.flush.scheduler.interval.ms")),
		Cleaner: partition.CleanerConfig{
			Disable:             !s.boolean("log.cleaner.enable"),
			Threads:             int(min(s.positive("log.cleaner.threads"), 64)),
			DedupeBufferSize:    s.positive("log.cleaner.dedupe.buffer.size"),
			LoadFactor:          s.fraction("log.cleaner.io.buffer.load.factor"),
			IOMaxBytesPerSecond: s.float("log.cleaner.io.max.bytes.per.second"),
			Backoff:             ms(s.positive("log.cleaner.backoff.ms")),
		},
	}
}

// float parses a floating-point property.
func (s *settings) float(name string) float64 {
	f, err := strconv.ParseFloat(s.values[name], 64)
	if err != nil {
		s.errs = append(s.errs, fmt.Sprintf("%s: %q is not a number", name, s.values[name]))
	}
	return f
}

// fraction parses a property in (0, 1].
func (s *settings) fraction(name string) float64 {
	f := s.float(name)
	if f <= 0 || f > 1 {
		s.errs = append(s.errs, fmt.Sprintf("%s must be in (0, 1], got %v", name, f))
	}
	return f
}

// txnConfig is the transaction coordinator's settings.
func (s *settings) txnConfig() txn.Config {
	return txn.Config{
		NumPartitions:         int32(min(s.positive("transaction.state.log.num.partitions"), math.MaxInt32)),
		ReplicationFactor:     int16(min(s.positive("transaction.state.log.replication.factor"), math.MaxInt16)),
		MinISR:                int32(min(s.positive("transaction.state.log.min.isr"), math.MaxInt32)),
		SegmentBytes:          s.positive("transaction.state.log.segment.bytes"),
		LoadBufferSize:        int32(min(s.positive("transaction.state.log.load.buffer.size"), math.MaxInt32)),
		MaxTimeout:            ms(s.positive("transaction.max.timeout.ms")),
		AbortTimedOutInterval: ms(s.positive("transaction.abort.timed.out.transaction.cleanup.interval.ms")),
		WriteTimeout:          txn.DefaultConfig().WriteTimeout,
	}
}

// replicationConfig is the replica manager's settings.
func (s *settings) replicationConfig() replication.Config {
	return replication.Config{
		ReplicaLagTimeMax:            ms(s.positive("replica.lag.time.max.ms")),
		ReplicaFetchWaitMax:          ms(s.positive("replica.fetch.wait.max.ms")),
		ReplicaFetchMinBytes:         int32(min(s.positive("replica.fetch.min.bytes"), math.MaxInt32)),
		ReplicaFetchMaxBytes:         int32(min(s.positive("replica.fetch.max.bytes"), math.MaxInt32)),
		ReplicaFetchResponseMaxBytes: int32(min(s.positive("replica.fetch.response.max.bytes"), math.MaxInt32)),
		ReplicaFetchBackoff:          ms(s.positive("replica.fetch.backoff.ms")),
		ReplicaSocketTimeout:         ms(s.positive("replica.socket.timeout.ms")),
		ReplicaSelectorClass:         strings.TrimSpace(s.str("replica.selector.class")),
		FollowerWritesUncached:       s.boolean("gokafka.replica.write.uncached.enable"),
		ProducerIDExpiration:         ms(s.positive("producer.id.expiration.ms")),
	}
}

// quotaConfig is the client-quota windows.
func (s *settings) quotaConfig() quota.Config {
	return quota.Config{
		WindowNum:  int(min(s.positive("quota.window.num"), math.MaxInt32)),
		WindowSize: time.Duration(min(s.positive("quota.window.size.seconds"), math.MaxInt32)) * time.Second,
	}
}

// groupConfig is the group coordinator's settings.
func (s *settings) groupConfig() group.Config {
	return group.Config{
		OffsetsTopicNumPartitions:     int32(min(s.positive("offsets.topic.num.partitions"), math.MaxInt32)),
		OffsetsTopicReplicationFactor: int16(min(s.positive("offsets.topic.replication.factor"), math.MaxInt16)),
		OffsetsTopicSegmentBytes:      s.positive("offsets.topic.segment.bytes"),
		OffsetsLoadBufferSize:         int32(min(s.positive("offsets.load.buffer.size"), math.MaxInt32)),
		OffsetsRetention:              time.Duration(s.positive("offsets.retention.minutes")) * time.Minute,
		OffsetsRetentionCheckInterval: ms(s.positive("offsets.retention.check.interval.ms")),
		OffsetCommitTimeout:           ms(s.positive("offsets.commit.timeout.ms")),
		OffsetMetadataMaxBytes:        int(s.i64("offset.metadata.max.bytes")),
		MinSessionTimeout:             ms(s.i64("group.min.session.timeout.ms")),
		MaxSessionTimeout:             ms(s.i64("group.max.session.timeout.ms")),
		InitialRebalanceDelay:         ms(s.i64("group.initial.rebalance.delay.ms")),
		MaxSize:                       int(min(s.positive("group.max.size"), math.MaxInt32)),
		ConsumerSessionTimeout:        ms(s.positive("group.consumer.session.timeout.ms")),
		ConsumerHeartbeatInterval:     ms(s.positive("group.consumer.heartbeat.interval.ms")),
		ConsumerMaxSize:               int(min(s.positive("group.consumer.max.size"), math.MaxInt32)),
		MigrationPolicy:               group.MigrationPolicy(strings.ToLower(s.str("group.consumer.migration.policy"))),
	}
}

// shareConfig is the share-group settings.
func (s *settings) shareConfig() share.Config {
	return share.Config{
		SessionTimeout:          ms(s.positive("group.share.session.timeout.ms")),
		HeartbeatInterval:       ms(s.positive("group.share.heartbeat.interval.ms")),
		RecordLockDuration:      ms(s.positive("group.share.record.lock.duration.ms")),
		DeliveryCountLimit:      int(min(s.positive("group.share.delivery.count.limit"), math.MaxInt16)),
		PartitionMaxRecordLocks: int(min(s.positive("group.share.partition.max.record.locks"), math.MaxInt32)),
		MaxGroupSize:            int(min(s.positive("group.share.max.size"), math.MaxInt32)),
		CheckpointInterval:      ms(s.positive("group.share.checkpoint.interval.ms")),
	}
}

// quorumConfig is the metadata quorum's settings.
func (s *settings) quorumConfig(voters []cluster.Voter) cluster.QuorumConfig {
	return cluster.QuorumConfig{
		Voters:            voters,
		HeartbeatInterval: ms(s.positive("broker.heartbeat.interval.ms")),
		SessionTimeout:    ms(s.positive("broker.session.timeout.ms")),
		ElectionTimeout:   ms(s.positive("controller.quorum.election.timeout.ms")),
		FetchTimeout:      ms(s.positive("controller.quorum.fetch.timeout.ms")),
		SnapshotBytes:     s.positive("metadata.log.max.record.bytes.between.snapshots"),
		SnapshotInterval:  snapshotInterval(s.nonNegative("metadata.log.max.snapshot.interval.ms")),
		RetentionBytes:    retentionLimit(s.i64("metadata.max.retention.bytes")),
		RetentionTime:     time.Duration(retentionLimit(s.i64("metadata.max.retention.ms"))) * time.Millisecond,
	}
}

// retentionLimit is metadata.max.retention.bytes or .ms as the quorum
// takes it: 0 is its default there, so Kafka's 0 (keep nothing before
// the snapshot) is the smallest limit, 1, and any negative value no
// limit.
func retentionLimit(v int64) int64 {
	switch {
	case v < 0:
		return -1
	case v == 0:
		return 1
	}
	return v
}

// snapshotInterval is metadata.log.max.snapshot.interval.ms as the quorum
// takes it: Kafka's 0 (never by time) is negative there.
func snapshotInterval(v int64) time.Duration {
	if v == 0 {
		return -1
	}
	return ms(v)
}

// authorizerConfig is the ACL authorizer's configuration, nil when
// authorizer.class.name is empty (no authorization).
func (s *settings) authorizerConfig() *acl.Config {
	switch name := s.str("authorizer.class.name"); name {
	case "":
		return nil
	case acl.StandardAuthorizerClass, acl.AclAuthorizerClass:
		return &acl.Config{SuperUsers: acl.ParseSuperUsers(s.str("super.users")), AllowIfNoACL: s.boolean("allow.everyone.if.no.acl.found")}
	default:
		s.errs = append(s.errs, fmt.Sprintf("authorizer.class.name: unknown authorizer %q (gokafka has %s)", name, acl.StandardAuthorizerClass))
		return nil
	}
}

// validate checks the roles, the settings only topics and the
// coordinators read, and the coordinators' own constraints.
func (s *settings) validate(cfg *broker.Config) {
	var isBroker, isController bool
	for _, r := range s.list("process.roles") {
		switch r {
		case "broker":
			isBroker = true
		case "controller":
			isController = true
		default:
			s.errs = append(s.errs, fmt.Sprintf("process.roles: unknown role %q", r))
		}
	}
	if !isBroker && !isController {
		s.errs = append(s.errs, "process.roles: name broker, controller or both")
	}
	cfg.Roles = broker.Roles{BrokerOnly: isBroker && !isController, ControllerOnly: isController && !isBroker}
	if (cfg.Roles.BrokerOnly || cfg.Roles.ControllerOnly) && len(cfg.Quorum.Voters) == 0 {
		s.errs = append(s.errs, "process.roles: a broker-only or controller-only node needs controller.quorum.voters")
	}
	inVoters := slices.ContainsFunc(cfg.Quorum.Voters, func(v cluster.Voter) bool { return v.ID == cfg.NodeID })
	if cfg.Roles.BrokerOnly && inVoters {
		s.errs = append(s.errs, fmt.Sprintf("process.roles=broker: node.id %d must not be in controller.quorum.voters", cfg.NodeID))
	}
	s.positive("message.max.bytes")
	s.positive("log.segment.bytes")
	s.positive("log.flush.interval.messages")
	s.positive("min.insync.replicas")
	if err := cfg.Groups.Validate(); err != nil {
		s.errs = append(s.errs, err.Error())
	}
	if err := cfg.Txn.Validate(); err != nil {
		s.errs = append(s.errs, err.Error())
	}
	if err := cfg.Share.Validate(); err != nil {
		s.errs = append(s.errs, err.Error())
	}
}

func upper(in []string) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = strings.ToUpper(v)
	}
	return out
}
