def train(model, loader, optimizer, ce, aux_weight=0.4):
    for epoch in range(10):
        for images, labels in loader:
            logits, aux_logits = model(images)
            loss = ce(logits, labels) + aux_weight * ce(aux_logits, labels)
            optimizer.zero_grad()
            loss.backward(create_graph=False, retain_graph=True)
            optimizer.step()
