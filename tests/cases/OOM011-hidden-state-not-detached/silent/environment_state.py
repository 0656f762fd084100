def train(agent, env, optimizer, steps):
    state = env.reset()
    for _ in range(steps):
        action = agent.act(state)
        state, reward, done = env.step(state, action)
        loss = agent.loss(reward)
        loss.backward()
        optimizer.step()
