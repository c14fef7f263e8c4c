package group

// The coordinator's side of online migration (migrate.go): the
// conversions, each written as one append (so one batch: the classic
// group's record or its tombstone together with the consumer group's
// records or their tombstones), and the classic protocol's requests routed
// to a consumer group. A coordinator that fails over mid-way loads either
// the group before the batch or the group after it, never a mix.

// canUpgradeLocked is Kafka's validateOnlineUpgrade: the policy allows
// it, the group is alive, uses the consumer embedded protocol, and its
// members fit group.consumer.max.size (the joining member may then still
// find the group full).
func (c *Coordinator) canUpgradeLocked(e *groupEntry) bool {
	g := e.g
	return c.cfg.MigrationPolicy.upgradeEnabled() && g.state != StateDead &&
		len(g.members) > 0 && g.usesConsumerProtocol() && len(g.members) <= c.cfg.ConsumerMaxSize
}

// upgradeLocked makes the entry's classic group with members a consumer
// group (Kafka's convertToConsumerGroup): parked JoinGroup and SyncGroup
// requests are answered REBALANCE_IN_PROGRESS (their members rejoin the
// consumer group), the classic group keeps only the offsets. It returns
// the classic group's tombstone; the caller writes it with the consumer
// group's records.
func (c *Coordinator) upgradeLocked(e *groupEntry, view *TopicsView) []record {
	now := c.nowMs()
	e.cg = consumerGroupFromClassic(e.g, c.cdeps, view, now)
	n := len(e.g.members)
	e.g.clearMembership(now, ErrRebalanceInProgress)
	c.logger.Info().Str("group", e.g.id).Int("members", n).Int32("epoch", e.cg.groupEpoch).Msg("upgraded classic group to a consumer group")
	return []record{{key: groupKey(e.g.id)}}
}

// clearMembership empties a classic group whose members moved to a
// consumer group; its offsets stay.
func (g *classicGroup) clearMembership(nowMs int64, err error) {
	for _, id := range g.order {
		m := g.members[id]
		g.invokeJoin(m, joinError(m.id, err))
		g.invokeSync(m, SyncResult{Err: err})
	}
	clear(g.members)
	g.order = nil
	clear(g.static)
	clear(g.pending)
	clear(g.pendingSync)
	g.syncDeadline = noDeadline
	g.join.active = false
	g.protocolType, g.protocolName = nil, nil
	g.generation, g.leader = 0, ""
	g.transition(StateEmpty, nowMs)
}

// canDowngradeLocked is Kafka's validateOnlineDowngrade, asked after a
// consumer-protocol member left: the policy allows it, only classic
// members remain and they fit a classic group.
func (c *Coordinator) canDowngradeLocked(e *groupEntry) bool {
	return e.cg != nil && c.cfg.MigrationPolicy.downgradeEnabled() && e.cg.state != ConsumerDead &&
		e.cg.onlyClassicMembers() && len(e.cg.members) <= c.cfg.MaxSize
}

// downgradeLocked makes the entry's consumer group, left with classic
// members only, a classic group (Kafka's convertToClassicGroup) and starts
// a rebalance in it. It returns the records to write as one: tombstones
// for the consumer group's records and the classic group's record.
func (c *Coordinator) downgradeLocked(e *groupEntry, view *TopicsView, generation int32) []record {
	now := c.nowMs()
	v := e.cg.classicValue(view, now, generation)
	protocols := map[string][]Protocol{}
	for id, m := range e.cg.members {
		protocols[id] = m.classic.protocols
	}
	e.cg = nil
	recs := c.consumerDiffLocked(e)
	recs = append(recs, record{key: groupKey(e.g.id), value: encodeGroupValue(v)})
	tmp := loadedGroup(e.g.id, e.deps, v, now)
	g := e.g
	g.protocolType, g.protocolName, g.generation, g.leader = tmp.protocolType, tmp.protocolName, tmp.generation, tmp.leader
	g.members, g.order, g.static = tmp.members, tmp.order, tmp.static
	for id, m := range g.members {
		m.protocols = protocols[id]
	}
	g.transition(StateStable, now)
	g.prepareRebalance(now)
	c.logger.Info().Str("group", g.id).Int("members", len(g.members)).Int32("generation", g.generation).Msg("downgraded consumer group to a classic group")
	return recs
}

// maybeDowngradeLocked downgrades the group after a consumer-protocol
// member left, when allowed, in generation epoch (the group epoch before
// the member left); it returns the records to write, nil if the group
// stays as it is.
func (c *Coordinator) maybeDowngradeLocked(e *groupEntry, epoch int32) []record {
	if !c.canDowngradeLocked(e) {
		return nil
	}
	return c.downgradeLocked(e, c.topicsView(), epoch)
}

// classicJoinLocked serves a JoinGroup to a consumer group with members;
// it returns the answer and the records to write before giving it.
func (c *Coordinator) classicJoinLocked(e *groupEntry, p JoinParams) (JoinResult, []record) {
	if err := e.cg.checkClassicJoin(p); err != nil {
		return joinError(p.MemberID, err), nil
	}
	if p.MemberID == "" {
		prefix := p.ClientID
		if p.InstanceID != nil {
			prefix = *p.InstanceID
		}
		p.MemberID = c.deps.newMemberID(prefix)
		if p.InstanceID == nil && p.RequireKnownMemberID {
			return joinError(p.MemberID, ErrMemberIDRequired), nil
		}
	}
	r := e.cg.classicJoin(c.nowMs(), c.topicsView(), p)
	if r.Err != nil {
		return r, nil
	}
	return r, c.consumerDiffLocked(e)
}

// joinConsumerGroupUnlock answers a JoinGroup to a consumer group with members;
// it runs with e's lock held and releases it.
func (c *Coordinator) joinConsumerGroupUnlock(e *groupEntry, p JoinParams) JoinResult {
	r, recs := c.classicJoinLocked(e, p)
	c.rescheduleLocked(e)
	if err := c.writeConsumerUnlock(e, recs); err != nil {
		return joinError(p.MemberID, err)
	}
	return r
}

// expireConsumerLocked runs a consumer group's timers (the entry's timer
// fired) and writes what changed, downgrading the group if the last
// consumer-protocol member expired.
func (c *Coordinator) expireConsumerLocked(e *groupEntry) {
	epoch := e.cg.groupEpoch
	if e.cg.tick(c.nowMs()) {
		if recs := c.maybeDowngradeLocked(e, epoch); recs != nil {
			c.enqueueConsumerLocked(e, recs, nil)
			return
		}
	}
	c.persistConsumerLocked(e)
}
