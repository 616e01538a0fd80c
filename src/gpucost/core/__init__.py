"""The allocation core: pure, typed money and allocation logic (row reference and lazy engines)."""
