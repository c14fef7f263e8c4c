package handlers

// DescribeUserScramCredentials (key 50) and AlterUserScramCredentials
// (key 51), v0 (KIP-554).
//
// Alter takes deletions and upsertions (a salt and a salted password per
// user and mechanism) and answers per user: the controller applies all of
// a user's operations or none (cluster/scram.go has Kafka's checks and
// errors). Describe answers from this broker's metadata: every user with
// credentials for a null or empty user list; for named users their
// mechanisms and iterations, RESOURCE_NOT_FOUND for a user without any
// and DUPLICATE_RESOURCE for a user named twice. Salts and keys are
// never returned.
//
// Authorization (authz.go), as Kafka's: ALTER on the cluster for Alter
// (CLUSTER_AUTHORIZATION_FAILED for every user), DESCRIBE on the cluster
// for Describe (CLUSTER_AUTHORIZATION_FAILED at the top level).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
	"github.com/gokafka/gokafka/cluster"
	"github.com/gokafka/gokafka/protocol"
	"github.com/gokafka/gokafka/sasl"
)

func (h *Handlers) registerScramCredentials(reg *protocol.Registry) {
	reg.Register(50, 0, 0, h.describeUserScramCredentials)
	reg.Register(51, 0, 0, h.alterUserScramCredentials)
}

func (h *Handlers) alterUserScramCredentials(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var dels []cluster.ScramChange
	var ups []cluster.ScramUpsert
	var users []string
	seen := map[string]bool{}
	note := func(u string) {
		if !seen[u] {
			seen[u] = true
			users = append(users, u)
		}
	}
	for _, d := range r.Deletions {
		note(d.Name)
		dels = append(dels, cluster.ScramChange{User: d.Name, Mechanism: mechanismName(d.Mechanism)})
	}
	for _, u := range r.Upsertions {
		note(u.Name)
		ups = append(ups, cluster.ScramUpsert{User: u.Name, Mechanism: mechanismName(u.Mechanism), Iterations: u.Iterations, Salt: u.Salt, Salted: u.SaltedPassword})
	}
	if !h.authorizeCluster(req, acl.OpAlter) {
		for _, u := range users {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = u, errorCode(errClusterAuthorization)
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	var errs map[string]error
	if h.ctrl != nil {
		errs = h.ctrl.AlterUserScramCredentials(ctx, dels, ups)
		for _, u := range users {
			if _, answered := errs[u]; answered && errs[u] == nil {
				h.awaitPropagation(ctx, req, defaultPropagationTimeout)
				break
			}
		}
	}
	for _, u := range users {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = u
		err, answered := errs[u]
		if h.ctrl == nil || !answered {
			err = kerr.UnsupportedVersion
		}
		if err != nil {
			res.ErrorCode = errorCode(err)
			var se *cluster.ScramError
			if errors.As(err, &se) {
				res.ErrorMessage = &se.Msg
			} else {
				res.ErrorMessage = errorMessage(err)
			}
			req.Logger().Debug().Err(err).Str("user", u).Msg("SCRAM credential change refused")
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// mechanismName maps a SCRAM mechanism number to its name; an unknown
// number maps to a name the controller refuses.
func mechanismName(code int8) string {
	if n := cluster.ScramMechanismName(code); n != "" {
		return n
	}
	return "UNKNOWN"
}

func (h *Handlers) describeUserScramCredentials(_ context.Context, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !h.authorizeCluster(req, acl.OpDescribe) {
		resp.ErrorCode = errorCode(errClusterAuthorization)
		return resp, nil
	}
	im := h.meta.Image()
	var users []string
	count := map[string]int{}
	if len(r.Users) == 0 {
		users = im.ScramUsers()
	} else {
		for _, u := range r.Users {
			if count[u.Name]++; count[u.Name] == 1 {
				users = append(users, u.Name)
			}
		}
	}
	for _, u := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		creds := im.ScramCredentials[u]
		switch {
		case count[u] > 1:
			res.ErrorCode = kerr.DuplicateResource.Code
			msg := "Cannot describe SCRAM credentials for the same user twice in a single request: " + u
			res.ErrorMessage = &msg
		case len(creds) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			msg := "Attempt to describe a user credential that does not exist: " + u
			res.ErrorMessage = &msg
		default:
			for _, mech := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
				if c, ok := creds[mech]; ok {
					ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
					ci.Mechanism, ci.Iterations = cluster.ScramMechanismCode(mech), c.Iterations
					res.CredentialInfos = append(res.CredentialInfos, ci)
				}
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
