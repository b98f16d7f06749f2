// Package repotest holds repository-wide checks that no single package owns:
// every package documents itself, imports run one way (prog → components →
// internal, never back up), and the portable core (router, sleeve, ipam,
// mesh) never depends on Linux kernel plumbing, so it builds and tests on any
// OS and the CNI plugin stays small.
package repotest
