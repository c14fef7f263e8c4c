package handlers

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/group"
	"github.com/gokafka/gokafka/idempotent"
	"github.com/gokafka/gokafka/partition"
	"github.com/gokafka/gokafka/replication"
	"github.com/gokafka/gokafka/share"
	"github.com/gokafka/gokafka/txn"
)

// The ways a handler turns an error into a Kafka code.
const (
	pathAny            = "any"             // every handler
	pathShare          = "share"           // the share-group handlers
	pathAlterPartition = "alter_partition" // AlterPartition's partitions
	pathOldTxn         = "old_txn"         // transaction requests before KIP-588
)

var codePaths = map[string]func(error) int16{
	pathAny:            errorCode,
	pathShare:          errorCode,
	pathAlterPartition: alterPartitionErrorCode,
	pathOldTxn:         func(err error) int16 { return txnErrorCode(err, true) },
}

// sentinelCodes is every sentinel the packages export, with the code each
// handler path answers for it.
var sentinelCodes = []struct {
	name string
	err  error
	path string
	want *kerr.Error // nil: no error
}{
	{"cluster.ErrTopicExists", cluster.ErrTopicExists, pathAny, kerr.TopicAlreadyExists},
	{"cluster.ErrUnknownTopic", cluster.ErrUnknownTopic, pathAny, kerr.UnknownTopicOrPartition},
	{"cluster.ErrInvalidTopic", cluster.ErrInvalidTopic, pathAny, kerr.InvalidTopicException},
	{"cluster.ErrInvalidPartitions", cluster.ErrInvalidPartitions, pathAny, kerr.InvalidPartitions},
	{"cluster.ErrInvalidReplicationFactor", cluster.ErrInvalidReplicationFactor, pathAny, kerr.InvalidReplicationFactor},
	{"cluster.ErrInvalidReplicaAssignment", cluster.ErrInvalidReplicaAssignment, pathAny, kerr.InvalidReplicaAssignment},
	{"cluster.ErrInvalidConfig", cluster.ErrInvalidConfig, pathAny, kerr.InvalidConfig},
	{"cluster.ErrInvalidRequest", cluster.ErrInvalidRequest, pathAny, kerr.InvalidRequest},
	{"cluster.ErrTopicDeletionDisabled", cluster.ErrTopicDeletionDisabled, pathAny, kerr.TopicDeletionDisabled},
	{"cluster.ErrNotController", cluster.ErrNotController, pathAny, kerr.NotController},
	// Nothing returns it yet; before it wrapped its Kafka error it was
	// unmapped (UNKNOWN_SERVER_ERROR).
	{"cluster.ErrTopicAuthorizationFailure", cluster.ErrTopicAuthorizationFailure, pathAny, kerr.TopicAuthorizationFailed},
	// The AlterPartition outcomes answer as such only to AlterPartition;
	// elsewhere (a stale change in AssignReplicasToDirs, a producer id
	// block) they are an internal conflict.
	{"cluster.ErrInvalidUpdateVersion", cluster.ErrInvalidUpdateVersion, pathAny, kerr.UnknownServerError},
	{"cluster.ErrFencedLeaderEpoch", cluster.ErrFencedLeaderEpoch, pathAny, kerr.UnknownServerError},
	{"cluster.ErrIneligibleReplica", cluster.ErrIneligibleReplica, pathAny, kerr.UnknownServerError},
	{"cluster.ErrNotLeader", cluster.ErrNotLeader, pathAny, kerr.UnknownServerError},
	{"cluster.ErrInvalidUpdateVersion", cluster.ErrInvalidUpdateVersion, pathAlterPartition, kerr.InvalidUpdateVersion},
	{"cluster.ErrFencedLeaderEpoch", cluster.ErrFencedLeaderEpoch, pathAlterPartition, kerr.FencedLeaderEpoch},
	{"cluster.ErrIneligibleReplica", cluster.ErrIneligibleReplica, pathAlterPartition, kerr.IneligibleReplica},
	{"cluster.ErrNotLeader", cluster.ErrNotLeader, pathAlterPartition, kerr.NotLeaderForPartition},
	{"cluster.ErrUnknownTopic", cluster.ErrUnknownTopic, pathAlterPartition, kerr.UnknownTopicOrPartition},
	{"cluster.ErrNotController", cluster.ErrNotController, pathAlterPartition, kerr.NotController},
	{"cluster.ErrNewLeaderElected", cluster.ErrNewLeaderElected, pathAlterPartition, kerr.NewLeaderElected},
	// Reassignment and election outcomes (cluster/reassign.go).
	{"cluster.ErrNoReassignmentInProgress", cluster.ErrNoReassignmentInProgress, pathAny, kerr.NoReassignmentInProgress},
	{"cluster.ErrElectionNotNeeded", cluster.ErrElectionNotNeeded, pathAny, kerr.ElectionNotNeeded},
	{"cluster.ErrPreferredLeaderNotAvailable", cluster.ErrPreferredLeaderNotAvailable, pathAny, kerr.PreferredLeaderNotAvailable},
	{"cluster.ErrEligibleLeadersNotAvailable", cluster.ErrEligibleLeadersNotAvailable, pathAny, kerr.EligibleLeadersNotAvailable},
	{"cluster.ErrNewLeaderElected", cluster.ErrNewLeaderElected, pathAny, kerr.NewLeaderElected},
	// Anything else AlterPartition fails with is UNKNOWN_SERVER_ERROR.
	{"cluster.ErrInvalidRequest", cluster.ErrInvalidRequest, pathAlterPartition, kerr.UnknownServerError},

	{"group.ErrCoordinatorNotAvailable", group.ErrCoordinatorNotAvailable, pathAny, kerr.CoordinatorNotAvailable},
	{"group.ErrNotCoordinator", group.ErrNotCoordinator, pathAny, kerr.NotCoordinator},
	{"group.ErrCoordinatorLoading", group.ErrCoordinatorLoading, pathAny, kerr.CoordinatorLoadInProgress},
	{"group.ErrInvalidGroupID", group.ErrInvalidGroupID, pathAny, kerr.InvalidGroupID},
	{"group.ErrInvalidSessionTimeout", group.ErrInvalidSessionTimeout, pathAny, kerr.InvalidSessionTimeout},
	{"group.ErrUnknownMemberID", group.ErrUnknownMemberID, pathAny, kerr.UnknownMemberID},
	{"group.ErrMemberIDRequired", group.ErrMemberIDRequired, pathAny, kerr.MemberIDRequired},
	{"group.ErrIllegalGeneration", group.ErrIllegalGeneration, pathAny, kerr.IllegalGeneration},
	{"group.ErrRebalanceInProgress", group.ErrRebalanceInProgress, pathAny, kerr.RebalanceInProgress},
	{"group.ErrInconsistentProtocol", group.ErrInconsistentProtocol, pathAny, kerr.InconsistentGroupProtocol},
	{"group.ErrFencedInstanceID", group.ErrFencedInstanceID, pathAny, kerr.FencedInstanceID},
	{"group.ErrGroupMaxSizeReached", group.ErrGroupMaxSizeReached, pathAny, kerr.GroupMaxSizeReached},
	{"group.ErrGroupIDNotFound", group.ErrGroupIDNotFound, pathAny, kerr.GroupIDNotFound},
	{"group.ErrNonEmptyGroup", group.ErrNonEmptyGroup, pathAny, kerr.NonEmptyGroup},
	{"group.ErrGroupSubscribedToTopic", group.ErrGroupSubscribedToTopic, pathAny, kerr.GroupSubscribedToTopic},
	{"group.ErrOffsetMetadataTooLarge", group.ErrOffsetMetadataTooLarge, pathAny, kerr.OffsetMetadataTooLarge},
	{"group.ErrInvalidCommitOffsetSize", group.ErrInvalidCommitOffsetSize, pathAny, kerr.InvalidCommitOffsetSize},
	{"group.ErrUnknownServer", group.ErrUnknownServer, pathAny, kerr.UnknownServerError},
	{"group.ErrFencedMemberEpoch", group.ErrFencedMemberEpoch, pathAny, kerr.FencedMemberEpoch},
	{"group.ErrStaleMemberEpoch", group.ErrStaleMemberEpoch, pathAny, kerr.StaleMemberEpoch},
	{"group.ErrUnreleasedInstanceID", group.ErrUnreleasedInstanceID, pathAny, kerr.UnreleasedInstanceID},
	{"group.ErrUnsupportedAssignor", group.ErrUnsupportedAssignor, pathAny, kerr.UnsupportedAssignor},
	{"group.ErrInvalidRequest", group.ErrInvalidRequest, pathAny, kerr.InvalidRequest},
	{"group.ErrInvalidRegularExpression", group.ErrInvalidRegularExpression, pathAny, kerr.InvalidRegularExpression},
	{"group.ErrUnsupportedVersion", group.ErrUnsupportedVersion, pathAny, kerr.UnsupportedVersion},

	{"txn.ErrCoordinatorNotAvailable", txn.ErrCoordinatorNotAvailable, pathAny, kerr.CoordinatorNotAvailable},
	{"txn.ErrNotCoordinator", txn.ErrNotCoordinator, pathAny, kerr.NotCoordinator},
	{"txn.ErrCoordinatorLoading", txn.ErrCoordinatorLoading, pathAny, kerr.CoordinatorLoadInProgress},
	{"txn.ErrConcurrentTransactions", txn.ErrConcurrentTransactions, pathAny, kerr.ConcurrentTransactions},
	{"txn.ErrInvalidProducerIDMapping", txn.ErrInvalidProducerIDMapping, pathAny, kerr.InvalidProducerIDMapping},
	{"txn.ErrProducerFenced", txn.ErrProducerFenced, pathAny, kerr.ProducerFenced},
	{"txn.ErrProducerFenced", txn.ErrProducerFenced, pathOldTxn, kerr.InvalidProducerEpoch},
	{"txn.ErrInvalidTxnState", txn.ErrInvalidTxnState, pathAny, kerr.InvalidTxnState},
	{"txn.ErrInvalidTxnTimeout", txn.ErrInvalidTxnTimeout, pathAny, kerr.InvalidTransactionTimeout},
	{"txn.ErrTransactionalIDNotFound", txn.ErrTransactionalIDNotFound, pathAny, kerr.TransactionalIDNotFound},
	{"txn.ErrInvalidRequest", txn.ErrInvalidRequest, pathAny, kerr.InvalidRequest},
	{"txn.ErrUnknownServer", txn.ErrUnknownServer, pathAny, kerr.UnknownServerError},

	{"share.ErrNotCoordinator", share.ErrNotCoordinator, pathShare, kerr.NotCoordinator},
	{"share.ErrCoordinatorUnavailable", share.ErrCoordinatorUnavailable, pathShare, kerr.CoordinatorNotAvailable},
	{"share.ErrUnknownMember", share.ErrUnknownMember, pathShare, kerr.UnknownMemberID},
	{"share.ErrFencedMemberEpoch", share.ErrFencedMemberEpoch, pathShare, kerr.FencedMemberEpoch},
	{"share.ErrGroupNotFound", share.ErrGroupNotFound, pathShare, kerr.GroupIDNotFound},
	{"share.ErrNonEmptyGroup", share.ErrNonEmptyGroup, pathShare, kerr.NonEmptyGroup},
	{"share.ErrInvalidRequest", share.ErrInvalidRequest, pathShare, kerr.InvalidRequest},
	{"share.ErrInvalidRecordState", share.ErrInvalidRecordState, pathShare, kerr.InvalidRecordState},
	{"share.ErrSessionNotFound", share.ErrSessionNotFound, pathShare, kerr.ShareSessionNotFound},
	{"share.ErrInvalidSessionEpoch", share.ErrInvalidSessionEpoch, pathShare, kerr.InvalidShareSessionEpoch},
	{"share.ErrNotLeader", share.ErrNotLeader, pathShare, kerr.NotLeaderForPartition},
	{"share.ErrUnknownTopic", share.ErrUnknownTopic, pathShare, kerr.UnknownTopicOrPartition},
	{"share.ErrGroupMaxSize", share.ErrGroupMaxSize, pathShare, kerr.GroupMaxSizeReached},

	{"replication.ErrUnknownTopicOrPartition", replication.ErrUnknownTopicOrPartition, pathAny, kerr.UnknownTopicOrPartition},
	{"replication.ErrNotLeaderOrFollower", replication.ErrNotLeaderOrFollower, pathAny, kerr.NotLeaderForPartition},
	{"replication.ErrFencedLeaderEpoch", replication.ErrFencedLeaderEpoch, pathAny, kerr.FencedLeaderEpoch},
	{"replication.ErrUnknownLeaderEpoch", replication.ErrUnknownLeaderEpoch, pathAny, kerr.UnknownLeaderEpoch},
	{"replication.ErrNotEnoughReplicas", replication.ErrNotEnoughReplicas, pathAny, kerr.NotEnoughReplicas},
	{"replication.ErrNotEnoughReplicasAfterAppend", replication.ErrNotEnoughReplicasAfterAppend, pathAny, kerr.NotEnoughReplicasAfterAppend},
	{"replication.ErrRequestTimedOut", replication.ErrRequestTimedOut, pathAny, kerr.RequestTimedOut},
	{"replication.ErrStorage", replication.ErrStorage, pathAny, kerr.KafkaStorageError},
	{"replication.ErrOffsetNotAvailable", replication.ErrOffsetNotAvailable, pathAny, kerr.OffsetNotAvailable},
	{"replication.ErrProducerStateLoading", replication.ErrProducerStateLoading, pathAny, kerr.NotLeaderForPartition},

	{"partition.ErrCorruptMessage", partition.ErrCorruptMessage, pathAny, kerr.CorruptMessage},
	{"partition.ErrInvalidRecord", partition.ErrInvalidRecord, pathAny, kerr.InvalidRecord},
	{"partition.ErrMessageTooLarge", partition.ErrMessageTooLarge, pathAny, kerr.MessageTooLarge},
	{"partition.ErrRecordListTooLarge", partition.ErrRecordListTooLarge, pathAny, kerr.RecordListTooLarge},
	{"partition.ErrOffsetOutOfRange", partition.ErrOffsetOutOfRange, pathAny, kerr.OffsetOutOfRange},
	{"partition.ErrUnsupportedMagic", partition.ErrUnsupportedMagic, pathAny, kerr.UnsupportedForMessageFormat},
	{"partition.ErrUnsupportedCompression", partition.ErrUnsupportedCompression, pathAny, kerr.UnsupportedCompressionType},
	{"partition.ErrLogClosed", partition.ErrLogClosed, pathAny, kerr.NotLeaderForPartition},
	{"partition.ErrStorage", partition.ErrStorage, pathAny, kerr.KafkaStorageError},
	// A follower's append; no client sees it.
	{"partition.ErrOffsetsOutOfOrder", partition.ErrOffsetsOutOfOrder, pathAny, kerr.UnknownServerError},
	// A request from a non-peer closes the connection before any code is
	// answered (roles.go); as an error it is internal.
	{"cluster.ErrNotPeer", cluster.ErrNotPeer, pathAny, kerr.UnknownServerError},

	{"idempotent.ErrOutOfOrderSequence", idempotent.ErrOutOfOrderSequence, pathAny, kerr.OutOfOrderSequenceNumber},
	{"idempotent.ErrInvalidProducerEpoch", idempotent.ErrInvalidProducerEpoch, pathAny, kerr.InvalidProducerEpoch},
	{"idempotent.ErrInvalidTxnState", idempotent.ErrInvalidTxnState, pathAny, kerr.InvalidTxnState},
	{"idempotent.ErrCoordinatorFenced", idempotent.ErrCoordinatorFenced, pathAny, kerr.TransactionCoordinatorFenced},
	// Loading a snapshot; no client sees it.
	{"idempotent.ErrCorruptSnapshot", idempotent.ErrCorruptSnapshot, pathAny, kerr.UnknownServerError},
}

func TestEverySentinelAnswersItsKafkaCode(t *testing.T) {
	for _, c := range sentinelCodes {
		if got := codePaths[c.path](c.err); got != c.want.Code {
			t.Errorf("%s on the %s path: code %d, want %s (%d)", c.name, c.path, got, c.want.Message, c.want.Code)
		}
		// Wrapped with context, as the packages return them.
		if got := codePaths[c.path](fmt.Errorf("topic t-0: %w", c.err)); got != c.want.Code {
			t.Errorf("wrapped %s on the %s path: code %d, want %d", c.name, c.path, got, c.want.Code)
		}
	}
}

// An error that carries more than one Kafka error answers with the one it
// always has.
func TestCompoundErrorsAnswerTheirKafkaCode(t *testing.T) {
	header := func(magic int8) []byte {
		b := make([]byte, partition.BatchHeaderSize)
		b[16] = byte(magic)
		return b
	}
	_, oldMagic := partition.ParseBatchHeader(header(1))
	_, badMagic := partition.ParseBatchHeader(header(7))
	for _, c := range []struct {
		name string
		err  error
		path string
		want *kerr.Error
	}{
		{"nil", nil, pathAny, &kerr.Error{}},
		{"nil alter partition", nil, pathAlterPartition, &kerr.Error{}},
		{"magic 0 or 1", oldMagic, pathAny, kerr.InvalidRecord},
		{"unknown magic", badMagic, pathAny, kerr.CorruptMessage},
		{"storage around a corrupt batch", fmt.Errorf("%w: %w", partition.ErrStorage, partition.ErrCorruptMessage), pathAny, kerr.KafkaStorageError},
		{"storage around a disk error", fmt.Errorf("%w: %w", partition.ErrStorage, syscall.EIO), pathAny, kerr.KafkaStorageError},
		{"replication timeout", fmt.Errorf("%w: %w", replication.ErrRequestTimedOut, context.DeadlineExceeded), pathAny, kerr.RequestTimedOut},
		{"deadline", context.DeadlineExceeded, pathAny, kerr.RequestTimedOut},
		{"canceled", fmt.Errorf("waiting: %w", context.Canceled), pathAny, kerr.RequestTimedOut},
		{"a Kafka error", kerr.BrokerIDNotRegistered, pathAny, kerr.BrokerIDNotRegistered},
		{"a wrapped Kafka error", fmt.Errorf("%w: broker 3", kerr.BrokerIDNotRegistered), pathAny, kerr.BrokerIDNotRegistered},
		{"a forwarded NOT_CONTROLLER", fmt.Errorf("%w: moved", cluster.ErrNotController), pathAny, kerr.NotController},
		{"a forwarded Kafka error to AlterPartition", kerr.InvalidUpdateVersion, pathAlterPartition, kerr.UnknownServerError},
		{"a forwarded Kafka error", kerr.InvalidUpdateVersion, pathAny, kerr.InvalidUpdateVersion},
		{"anything else", errors.New("boom"), pathAny, kerr.UnknownServerError},
		{"anything else to AlterPartition", context.DeadlineExceeded, pathAlterPartition, kerr.UnknownServerError},
		{"a share sentinel in a coordinator error", fmt.Errorf("%w: g", share.ErrGroupNotFound), pathShare, kerr.GroupIDNotFound},
		{"a fenced producer on new versions", txn.ErrProducerFenced, pathAny, kerr.ProducerFenced},
		{"another txn error on old versions", txn.ErrConcurrentTransactions, pathOldTxn, kerr.ConcurrentTransactions},
	} {
		if got := codePaths[c.path](c.err); got != c.want.Code {
			t.Errorf("%s on the %s path: code %d, want %s (%d)", c.name, c.path, got, c.want.Message, c.want.Code)
		}
	}
}

// FindCoordinator answers Kafka's message for a Kafka error and gokafka's
// own text for a coordinator's sentinel.
func TestFindCoordinatorMessageIsKafkasOnlyForKafkaErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{kerr.CoordinatorNotAvailable, kerr.CoordinatorNotAvailable.Message},
		{fmt.Errorf("%w: no brokers", kerr.CoordinatorNotAvailable), kerr.CoordinatorNotAvailable.Message},
		{group.ErrCoordinatorNotAvailable, "coordinator not available"},
		{fmt.Errorf("%w: loading", txn.ErrCoordinatorLoading), "coordinator load in progress: loading"},
		{share.ErrNotCoordinator, "not the coordinator of this share group"},
	} {
		if got := kafkaMessage(c.err); got == nil || *got != c.want {
			t.Errorf("%v: message %v, want %q", c.err, got, c.want)
		}
	}
}

// TestSentinelTableIsComplete keeps sentinelCodes listing every sentinel the
// packages export, so a new one gets a row (and a code) here.
func TestSentinelTableIsComplete(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range sentinelCodes {
		listed[c.name] = true
	}
	for _, pkg := range []string{"cluster", "group", "txn", "share", "replication", "partition", "idempotent", "quota"} {
		files, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, s := range gd.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						if n.IsExported() && strings.HasPrefix(n.Name, "Err") && !listed[pkg+"."+n.Name] {
							t.Errorf("%s.%s is not in sentinelCodes", pkg, n.Name)
						}
					}
				}
			}
		}
	}
}
