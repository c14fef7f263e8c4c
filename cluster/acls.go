package cluster

// ACLs (CreateAcls, DescribeAcls, DeleteAcls): the bindings package acl
// decides from live in the metadata like topics, so that every broker
// authorizes from the same ones, and a non-controller forwards a change
// to the active controller as a CreateAcls or DeleteAcls request, as
// Kafka's brokers do. Validation is acl.Binding.Validate and
// acl.Filter.Validate (INVALID_REQUEST). Creating a binding that exists
// already succeeds and changes nothing; a delete removes the bindings its
// filter matched in the controller's image, each at most once.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gokafka/gokafka/acl"
)

const (
	// CmdCreateACLs adds bindings (Command.ACLs) not present yet.
	CmdCreateACLs CommandType = "create_acls"
	// CmdDeleteACLs removes the bindings Command.ACLs names exactly.
	CmdDeleteACLs CommandType = "delete_acls"
)

// applyACLs applies a CmdCreateACLs or CmdDeleteACLs. The state's slice is
// replaced, never changed in place, as images share it; it stays sorted
// (acl.Binding.Compare) and without duplicates.
func (s *State) applyACLs(cmd *Command) {
	next := slices.Clone(s.acls)
	for _, b := range cmd.ACLs {
		i, found := slices.BinarySearchFunc(next, b, acl.Binding.Compare)
		switch {
		case cmd.Type == CmdCreateACLs && !found:
			next = slices.Insert(next, i, b)
		case cmd.Type == CmdDeleteACLs && found:
			next = slices.Delete(next, i, i+1)
		}
	}
	s.acls = next
}

// DescribeACLs returns the bindings f matches, in the metadata's order.
func (im *Image) DescribeACLs(f acl.Filter) []acl.Binding {
	var out []acl.Binding
	for _, b := range im.ACLs {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// SameACLs reports whether two images hold the same ACLs: the metadata
// replaces its slice on every ACL change, so comparing slices is enough.
func SameACLs(a, b *Image) bool {
	return len(a.ACLs) == len(b.ACLs) && (len(a.ACLs) == 0 || &a.ACLs[0] == &b.ACLs[0])
}

// CreateACLs validates and adds bindings, returning one error per binding.
// Invalid bindings are refused on their own; the valid ones are added
// together.
func (c *Controller) CreateACLs(ctx context.Context, bindings []acl.Binding) []error {
	errs := make([]error, len(bindings))
	var valid []acl.Binding
	var idx []int
	for i, b := range bindings {
		if errs[i] = b.Validate(); errs[i] == nil {
			valid = append(valid, b)
			idx = append(idx, i)
		}
	}
	if len(valid) == 0 {
		return errs
	}
	var res []error
	if c.IsLeader() {
		res = allErrs(len(valid), c.log.Propose(ctx, &Command{Type: CmdCreateACLs, ACLs: valid}))
		if res[0] == nil {
			c.logger.Info().Int("acls", len(valid)).Msg("acls created")
		}
	} else {
		res = c.forwardCreateACLs(ctx, valid)
	}
	for i, j := range idx {
		errs[j] = res[i]
	}
	return errs
}

// DeleteACLs removes the bindings each filter matches, returning them per
// filter, with one error per filter.
func (c *Controller) DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, []error) {
	matched := make([][]acl.Binding, len(filters))
	errs := make([]error, len(filters))
	var valid []acl.Filter
	var idx []int
	for i, f := range filters {
		if errs[i] = f.Validate(); errs[i] == nil {
			valid = append(valid, f)
			idx = append(idx, i)
		}
	}
	if len(valid) == 0 {
		return matched, errs
	}
	var m [][]acl.Binding
	var res []error
	if c.IsLeader() {
		m, res = c.deleteACLsLeader(ctx, valid)
	} else {
		m, res = c.forwardDeleteACLs(ctx, valid)
	}
	for i, j := range idx {
		matched[j], errs[j] = m[i], res[i]
	}
	return matched, errs
}

func (c *Controller) deleteACLsLeader(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, []error) {
	matched := make([][]acl.Binding, len(filters))
	if err := c.lockLeader(ctx); err != nil {
		return matched, allErrs(len(filters), err)
	}
	defer c.proposeMu.Unlock()
	im := c.Image()
	seen := map[acl.Binding]bool{}
	var del []acl.Binding
	for i, f := range filters {
		// A binding two filters match is reported by the first only, as
		// Kafka's controller deletes each ACL once.
		for _, b := range im.DescribeACLs(f) {
			if !seen[b] {
				seen[b] = true
				matched[i] = append(matched[i], b)
				del = append(del, b)
			}
		}
	}
	if len(del) == 0 {
		return matched, make([]error, len(filters))
	}
	if err := c.log.Propose(ctx, &Command{Type: CmdDeleteACLs, ACLs: del}); err != nil {
		return make([][]acl.Binding, len(filters)), allErrs(len(filters), err)
	}
	c.logger.Info().Int("acls", len(del)).Msg("acls deleted")
	return matched, make([]error, len(filters))
}

func (c *Controller) forwardCreateACLs(ctx context.Context, bindings []acl.Binding) []error {
	req := kmsg.NewPtrCreateACLsRequest()
	req.SetVersion(3)
	for _, b := range bindings {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType = kmsg.ACLResourceType(b.ResourceType)
		cr.ResourceName = b.ResourceName
		cr.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
		cr.Principal, cr.Host = b.Principal, b.Host
		cr.Operation = kmsg.ACLOperation(b.Operation)
		cr.PermissionType = kmsg.ACLPermissionType(b.Permission)
		req.Creations = append(req.Creations, cr)
	}
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		for _, res := range r.(*kmsg.CreateACLsResponse).Results {
			if res.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
		return false
	})
	if errors.Is(err, errLocalLeader) {
		return c.CreateACLs(ctx, bindings)
	}
	if err != nil {
		return allErrs(len(bindings), err)
	}
	results := resp.(*kmsg.CreateACLsResponse).Results
	errs := make([]error, len(bindings))
	var created []acl.Binding
	for i := range errs {
		if i >= len(results) {
			errs[i] = fmt.Errorf("controller did not answer for acl %s", bindings[i])
			continue
		}
		if errs[i] = codeErr(results[i].ErrorCode, results[i].ErrorMessage); errs[i] == nil {
			created = append(created, bindings[i])
		}
	}
	if len(created) > 0 {
		// Wait for the bindings themselves, so that the client reads
		// them back from this broker.
		if err := c.awaitLocal(ctx, func(im *Image) bool { return im.hasACLs(created, true) }); err != nil {
			for i := range errs {
				if errs[i] == nil {
					errs[i] = err
				}
			}
		}
	}
	return errs
}

func (c *Controller) forwardDeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, []error) {
	req := kmsg.NewPtrDeleteACLsRequest()
	req.SetVersion(3)
	for _, f := range filters {
		rf := kmsg.NewDeleteACLsRequestFilter()
		rf.ResourceType = kmsg.ACLResourceType(f.ResourceType)
		rf.ResourceName = f.ResourceName
		rf.ResourcePatternType = kmsg.ACLResourcePatternType(f.PatternType)
		rf.Principal, rf.Host = f.Principal, f.Host
		rf.Operation = kmsg.ACLOperation(f.Operation)
		rf.PermissionType = kmsg.ACLPermissionType(f.Permission)
		req.Filters = append(req.Filters, rf)
	}
	matched := make([][]acl.Binding, len(filters))
	resp, err := c.forward(ctx, req, func(r kmsg.Response) bool {
		for _, res := range r.(*kmsg.DeleteACLsResponse).Results {
			if res.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
		return false
	})
	if errors.Is(err, errLocalLeader) {
		return c.DeleteACLs(ctx, filters)
	}
	if err != nil {
		return matched, allErrs(len(filters), err)
	}
	results := resp.(*kmsg.DeleteACLsResponse).Results
	errs := make([]error, len(filters))
	var deleted []acl.Binding
	for i := range errs {
		if i >= len(results) {
			errs[i] = fmt.Errorf("controller did not answer for filter %d", i)
			continue
		}
		if errs[i] = codeErr(results[i].ErrorCode, results[i].ErrorMessage); errs[i] != nil {
			continue
		}
		for _, m := range results[i].MatchingACLs {
			if m.ErrorCode != 0 {
				continue
			}
			b := acl.Binding{
				ResourceType: acl.ResourceType(m.ResourceType), ResourceName: m.ResourceName,
				PatternType: acl.PatternType(m.ResourcePatternType), Principal: m.Principal, Host: m.Host,
				Operation: acl.Operation(m.Operation), Permission: acl.Permission(m.PermissionType),
			}
			matched[i] = append(matched[i], b)
			deleted = append(deleted, b)
		}
	}
	if len(deleted) > 0 {
		if err := c.awaitLocal(ctx, func(im *Image) bool { return im.hasACLs(deleted, false) }); err != nil {
			for i := range errs {
				if errs[i] == nil {
					errs[i] = err
				}
			}
		}
	}
	return matched, errs
}

// hasACLs reports whether every binding is present (or, with present
// false, absent) in the image.
func (im *Image) hasACLs(bindings []acl.Binding, present bool) bool {
	for _, b := range bindings {
		if _, found := slices.BinarySearchFunc(im.ACLs, b, acl.Binding.Compare); found != present {
			return false
		}
	}
	return true
}
