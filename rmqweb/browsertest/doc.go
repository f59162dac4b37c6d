// Package browsertest drives the rmqweb dashboard in a real headless
// Chromium (through chromedp) against a real Redis: it reads the pages
// with and without JavaScript, requeues a dead message from its form,
// checks the CSRF guard, and saves a screenshot of each page.
//
// It is a module of its own so that the core module never carries
// chromedp. Run it with scripts/test.sh, or by hand:
//
//	cd rmqweb/browsertest && RMQ_REDIS_ADDR=127.0.0.1:6379 RMQ_ARTIFACTS_DIR=/tmp/shots go test -race ./...
package browsertest
