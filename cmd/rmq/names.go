package main

import (
	"fmt"
	"strings"

	"github.com/rmq-go/rmq"
)

// checkTopic refuses a topic name that no topic can have, as bad usage,
// before anything connects.
func checkTopic(name string) error {
	if err := nameRules(name); err != nil {
		return &usageError{msg: strings.TrimPrefix(err.Error(), "rmq: "), err: err}
	}
	return nil
}

// checkNamespace refuses a namespace that breaks the rules of a topic name,
// as bad usage, as rmq.WithNamespace would: the ZooKeeper reads make no
// client, which checks it.
func checkNamespace(ns string) error {
	err := nameRules(ns)
	if err == nil {
		return nil
	}
	why := strings.TrimPrefix(err.Error(), fmt.Sprintf("%v %q: ", rmq.ErrInvalidTopic, ns))
	return &usageError{msg: fmt.Sprintf("%s %q: %s", strings.TrimPrefix(rmq.ErrInvalidNamespace.Error(), "rmq: "), ns, why),
		err: rmq.ErrInvalidNamespace}
}

// nameRules checks name against the rules of a topic name (a namespace has
// the same), with rmq.ErrInvalidTopic.
func nameRules(name string) error {
	return rmq.Topic{Name: name, SlotAmount: 1, Type: rmq.RangeMerge}.Validate()
}
