package ingest

import (
	"testing"

	"github.com/smartdrop/webhooks/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }
