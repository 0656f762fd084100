; OOM010 retry-inside-except: a call inside an `except` block. The host checks that the
; handler catches an out-of-memory error and that the call runs the network again (or
; retries the function the `try` is in).
(call
  function: [(identifier) (attribute)] @callee
  (#has-ancestor? @callee "except_clause")) @call
