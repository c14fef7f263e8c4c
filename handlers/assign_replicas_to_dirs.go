package handlers

// AssignReplicasToDirs (key 73), v0 (KIP-858): a broker tells the active
// controller which log dir holds some of its replicas. gokafka brokers send
// it for the replicas of a log dir that went offline, so that their
// heartbeat's OfflineLogDirs moves those partitions (cluster/logdirs.go).
// Topics are named by id; an unknown one answers UNKNOWN_TOPIC_ID for its
// partitions.

import (
	"context"
	"encoding/base64"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
)

func (h *Handlers) assignReplicasToDirs(ctx context.Context, c Controller, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AssignReplicasToDirsRequest)
	resp := r.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
	im := h.meta.Image()
	for _, d := range r.Directories {
		rd := kmsg.NewAssignReplicasToDirsResponseDirectory()
		rd.ID = d.ID
		parts := map[string][]int32{}
		for _, t := range d.Topics {
			ti := im.TopicByID(cluster.TopicID(t.TopicID))
			if ti != nil {
				for _, p := range t.Partitions {
					parts[ti.Name] = append(parts[ti.Name], p.Partition)
				}
			}
		}
		err := c.AssignReplicasToDirs(ctx, r.BrokerID, d.ID, parts)
		if code := errorCode(err); code == kerr.NotController.Code {
			resp.ErrorCode = code
			return resp, nil
		} else if code != 0 && resp.ErrorCode == 0 {
			resp.ErrorCode = code
		}
		for _, t := range d.Topics {
			rt := kmsg.NewAssignReplicasToDirsResponseDirectoryTopic()
			rt.TopicID = t.TopicID
			code := int16(0)
			if im.TopicByID(cluster.TopicID(t.TopicID)) == nil {
				code = kerr.UnknownTopicID.Code
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAssignReplicasToDirsResponseDirectoryTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rd.Topics = append(rd.Topics, rt)
		}
		resp.Directories = append(resp.Directories, rd)
	}
	return resp, nil
}

// dirIDs renders registered log dir ids as the metadata keeps them.
func dirIDs(ids [][16]byte) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, base64.RawURLEncoding.EncodeToString(id[:]))
	}
	return out
}
