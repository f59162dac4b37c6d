package rdb

import (
	"fmt"
	"slices"
)

// EachError is the error of a call on several keys of which some failed:
// Errs[i] is the failure of the i-th, nil where it went through.
type EachError struct {
	Errs []error
}

// Error implements error: the first failure, and how many there were.
func (e *EachError) Error() string {
	n, first := 0, error(nil)
	for _, err := range e.Errs {
		if err != nil {
			n++
			if first == nil {
				first = err
			}
		}
	}
	return fmt.Sprintf("%d of %d failed, the first: %v", n, len(e.Errs), first)
}

// Unwrap returns the failures, for errors.Is and errors.As.
func (e *EachError) Unwrap() []error {
	return slices.DeleteFunc(slices.Clone(e.Errs), func(err error) bool { return err == nil })
}

// eachError returns nil if no call of errs failed, else an *EachError.
func eachError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return &EachError{Errs: errs}
		}
	}
	return nil
}
