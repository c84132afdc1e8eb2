// Package clock abstracts the passage of time so that code which waits,
// times out or stamps records can be tested without sleeping.
//
// Production code receives Real, which reads the wall clock. Tests
// receive a Fake, whose time stands still until the test calls Advance;
// timers created with After fire when Advance moves the fake time to or
// past their deadline.
//
// What can go wrong: a test that advances the fake clock before the code
// under test has called After will advance past nothing, and the code
// then waits forever. Tests should first wait until Waiters reports the
// expected number of pending timers, then Advance. A Fake never fires on
// its own, so code that mixes a Fake with real timers (time.After,
// time.Sleep) will not be deterministic.
package clock
