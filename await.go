package rmq

// awaitOr returns what done yields, or false if stop closes first: the
// caller leaves the call behind done running. A result ready when stop
// closes still wins.
func awaitOr[T any](done <-chan T, stop <-chan struct{}) (T, bool) {
	select {
	case v := <-done:
		return v, true
	case <-stop:
	}
	select {
	case v := <-done:
		return v, true
	default:
		var zero T
		return zero, false
	}
}
