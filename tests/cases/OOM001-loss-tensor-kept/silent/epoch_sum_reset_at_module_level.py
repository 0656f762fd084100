# A notebook-style loop: the running sum is set back to zero at the top of every epoch and
# each step's loss is backpropagated, so the sum holds one epoch's autograd nodes at most
# (their buffers freed) and is only printed. The evaluation sum runs under no_grad.
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10)).to("cuda")
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(5):
    epoch_loss = 0
    for images, labels in train_batches:
        predictions = model(images.to("cuda"))
        loss = criterion(predictions, labels.to("cuda"))
        epoch_loss += loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    epoch_loss /= len(train_batches)

    held_out, correct = 0, 0
    with torch.no_grad():
        for images, labels in test_batches:
            held_out += criterion(model(images.to("cuda")), labels.to("cuda"))
    print(f"epoch {epoch}: train {epoch_loss:.4f}, held out {held_out / len(test_batches):.4f}")

# A second run in the same notebook binds the name again, several names at once.
for epoch in range(5):
    epoch_loss, seen = 0, 0
    for images, labels in train_batches:
        loss = criterion(model(images.to("cuda")), labels.to("cuda"))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss += loss
        seen += 1
    print(epoch, epoch_loss.item() / seen)
