def train_gan(generator, discriminator, loader, opt_g, opt_d, bce, noise):
    for real in loader:
        fake = generator(noise())
        d_loss = bce(discriminator(real), 1) + bce(discriminator(fake), 0)
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)
        opt_d.step()
        g_loss = bce(discriminator(fake), 1)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
