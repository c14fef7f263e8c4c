// Package testkit holds the helpers gokafka's tests share: a v2 record
// batch builder and Eventually. It imports no gokafka package, so the
// internal tests of every package (partition's included) can use it. The
// fakes of cluster metadata and of a replica log, which need gokafka's
// types, live in testkit/fake.
package testkit
