//go:build !linux

package mesh

func runEMFILEChild(string) {}
