package deps
import (
_ "github.com/google/go-cmp/cmp"
_ "gonum.org/v1/gonum/graph"
_ "github.com/emicklei/dot"
_ "github.com/stretchr/testify/require"
)

