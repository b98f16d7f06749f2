//go:build !linux

package mesh

func runEMFILEChild(string) {}

const attackChildEnv = "WEAVE_MESH_ATTACK_CHILD"

func runAttackChild(string) {}
