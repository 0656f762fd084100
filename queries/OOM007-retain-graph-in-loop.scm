; OOM007 retain-graph-in-loop: a call with `retain_graph=True` inside a loop, or inside a
; function (a helper called once per step). The host checks that it is a backward
; (`x.backward`, `torch.autograd.backward` / `grad`), finds the loop (around the call or
; around the helper's call sites), that the iteration builds the graph, and that nothing
; backpropagates through it later in the iteration.
(call
  function: [(identifier) (attribute)] @callee
  arguments: (argument_list
    (keyword_argument
      name: (identifier) @keyword
      value: (true)) @retain)
  (#eq? @keyword "retain_graph")
  (#has-ancestor? @callee "for_statement" "while_statement" "function_definition")) @call
