package e2e

import (
	"testing"

	"github.com/smartdrop/webhooks/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }
