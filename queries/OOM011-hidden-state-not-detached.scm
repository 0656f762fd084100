; OOM011 hidden-state-not-detached: `state = f(x, state)` (or `out, state = ...`) inside a
; loop. The host checks that the call runs a network, that the loop also runs backward,
; and that nothing in the loop detaches or resets the carried state.
(assignment
  left: (_) @targets
  right: (call
    function: [(identifier) (attribute)] @callee
    arguments: (argument_list) @arguments) @call
  (#has-ancestor? @call "for_statement" "while_statement")) @assignment
