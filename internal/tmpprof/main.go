package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/session"
)

func main() {
	f, err := gguf.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	m, err := models.Build(f, models.Options{NCtx: 256})
	if err != nil {
		panic(err)
	}
	s, err := session.NewSession(m, f, session.SessionOptions{})
	if err != nil {
		panic(err)
	}
	var toks []int32
	for i := range 64 {
		toks = append(toks, int32(100+i))
	}
	pf, _ := os.Create(os.Args[2])
	pprof.StartCPUProfile(pf)
	t0 := time.Now()
	if _, err := s.Step(toks); err != nil {
		panic(err)
	}
	t1 := time.Now()
	for i := range 8 {
		if _, err := s.Step([]int32{int32(200 + i)}); err != nil {
			panic(err)
		}
	}
	t2 := time.Now()
	pprof.StopCPUProfile()
	fmt.Println("prefill", t1.Sub(t0), "decode/token", t2.Sub(t1)/8)
}
